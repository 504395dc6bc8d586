"""The file system tools: read, write and search files inside one workspace folder."""
