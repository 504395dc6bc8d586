"""The document tools: overview, reading, tables and search for PDF, DOCX, XLSX, CSV, HTML,
Markdown and plain text.

PDF, DOCX and XLSX need the ``docs`` extra; the other formats are read with the standard
library. The format libraries are imported only when a document of their format is read.
"""
