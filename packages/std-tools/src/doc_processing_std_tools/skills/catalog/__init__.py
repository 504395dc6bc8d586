"""The catalog: where skills are under a root (discovery), one skill folder read into its
record, the scan cached by file stamps and kept across processes in an index, the kernel's
file-change watch, full-text search over the listed skills, and the ``skill://`` names and
file walk of a listed skill.

May import: ``skills.core``, ``skills.audit`` and the package's shared helpers and
settings. Never the scripts, the supply chain or the extension.
"""
