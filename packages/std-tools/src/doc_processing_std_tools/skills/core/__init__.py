"""The core of a skill, free of any folder walk: its SKILL.md frontmatter (read through a
hardened YAML reader), its name rules, its diagnostics and the one table of their codes,
the record the catalog keeps of it, the stamps that tell whether a file changed, and the
template a new skill starts from.

May import: the package's shared helpers (``errors``, ``_text``, ``_hidden``, ``_io``) and
the standard library. Imports nothing else from ``skills``.
"""
