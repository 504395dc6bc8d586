"""Skills from elsewhere: reading an install source, fetching and unpacking it within
limits, copying a folder without following links, installing skill by skill after the
audit, and the lock that pins every file of every listed skill.

May import: ``skills.core``, ``skills.audit``, ``skills.catalog`` and the package's shared
helpers. Never the scripts or the extension.
"""
