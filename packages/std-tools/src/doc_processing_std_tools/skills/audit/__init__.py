"""The static audit of skill folders: what a skill hides (invisible text), ships (bytecode,
links out of the folder) or reaches for (network modules, the home folder), judged one file
at a time, and the findings worded as the diagnostics that list_skills and validate show.

May import: ``skills.core`` and the package's shared helpers. Never the catalog, the
scripts, the supply chain or the extension.
"""
