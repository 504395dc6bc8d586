"""The one exception family of doc-processing-std-tools.

Every error says what was wrong, where, and how to fix it. The MCP glue turns a
`StdToolsError` into the SDK's `ToolError`, so its message reaches the client intact.
"""

from __future__ import annotations


class StdToolsError(Exception):
    """Base class of every error raised by doc-processing-std-tools."""


class ConfigError(StdToolsError):
    """A DPTTOOLS_* setting (or a command-line override) has a bad value."""


class InvalidArgumentError(StdToolsError):
    """A tool argument breaks a documented rule (a skill name, an empty field, ...)."""


class ChangeRefusedError(StdToolsError):
    """A write the change policy holds back (a version-control folder, agent settings, a
    build entry point ...); the message says why and which setting would allow it."""


class PathOutsideRootError(StdToolsError):
    """A path leads outside the folder it is confined to."""


class NotFoundError(StdToolsError):
    """A skill, file or folder that a tool was asked about does not exist."""


class AlreadyExistsError(StdToolsError):
    """Something that a tool would create exists already; nothing was overwritten."""


class FileTooLargeError(StdToolsError):
    """A file is larger than DPTTOOLS_MAX_FILE_SIZE_MB allows."""


class NotRegularFileError(InvalidArgumentError):
    """A path names a named pipe, socket or device, which a reader would wait on forever."""


class BinaryFileError(StdToolsError):
    """A file that should be text is binary or not UTF-8."""


class MissingExtraError(StdToolsError):
    """An optional dependency group is not installed."""


class DocumentError(StdToolsError):
    """A document cannot be read: it is empty, damaged, or not what its name says."""


class EncryptedDocumentError(DocumentError):
    """A document is protected by a password, so its content cannot be read."""


class UnsupportedFormatError(DocumentError):
    """A file's format is not one the document tools read."""


class AuthenticationError(StdToolsError):
    """A bearer token is missing, malformed, expired, or not issued for this server."""
