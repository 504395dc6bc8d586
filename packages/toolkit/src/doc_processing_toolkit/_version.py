"""The toolkit's version, in a module of its own so that any module can read it without
importing the package root."""

__version__ = "0.5.3"
