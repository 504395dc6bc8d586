"""A generated collection shaped like the public ones a new user installs first.

The skills sit four folders deep (``plugins/<plugin>/skills/<skill>/SKILL.md``), as in the
Trail of Bits collection. It holds the three invisible characters that honest skills use:
a zero-width space that breaks a ``` fence inside a Markdown template (twice), a
zero-width joiner inside a family emoji, and the variation selector after a heart. One
skill's name breaks the naming rule (``-21risk-automation``, as in Composio's collection;
its folder's name follows it), and two skills share a name (as in the public adversarial
corpus). The rest are plain.
"""

from __future__ import annotations

from pathlib import Path

ZWSP = "\u200b"
ZWJ = "\u200d"
VS16 = "\ufe0f"
FAMILY = f"\U0001f468{ZWJ}\U0001f469{ZWJ}\U0001f467"
HEART = f"\u2764{VS16}"

#: Every skill folder, relative to the collection's top, and its name.
SKILLS = {
    "plugins/docs/skills/template-writer": "template-writer",
    "plugins/docs/skills/greeter": "greeter",
    "plugins/automation/skills/21risk-automation": "-21risk-automation",
    "plugins/pdf/skills/pdf-tools": "pdf-tools",
    "plugins/pdf-extra/skills/pdf-tools": "pdf-tools",
    "plugins/misc/skills/notes": "notes",
}

#: The names a server (and install) lists: the duplicate once, the bad name by its folder.
INSTALLED = ["21risk-automation", "greeter", "notes", "pdf-tools", "template-writer"]

TEMPLATE = f"""# Writing a README

Show the reader a code block inside a code block:

````markdown
`{ZWSP}``python
print("hello")
`{ZWSP}``
````
"""


def _skill(folder: Path, name: str, body: str, description: str = "") -> None:
    folder.mkdir(parents=True)
    text = description or f"Does {name.strip('-')} things when asked."
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {text}\n---\n\n{body}", encoding="utf-8"
    )


def make_collection(top: Path) -> Path:
    """Write the collection under `top`; return `top`."""
    base = top / "plugins"
    _skill(
        base / "docs/skills/template-writer",
        "template-writer",
        "# Templates\n\nUse the template in references/readme.md.\n",
    )
    (base / "docs/skills/template-writer/references").mkdir()
    (base / "docs/skills/template-writer/references/readme.md").write_text(
        TEMPLATE, encoding="utf-8"
    )
    _skill(
        base / "docs/skills/greeter",
        "greeter",
        f"# Greeting\n\nSign off with {HEART} or, for families, {FAMILY}.\n",
    )
    _skill(
        base / "automation/skills/21risk-automation",
        "-21risk-automation",
        "# 21risk\n\nAutomate 21risk tasks.\n",
    )
    _skill(base / "pdf/skills/pdf-tools", "pdf-tools", "# PDF\n\nThe first one.\n")
    _skill(base / "pdf-extra/skills/pdf-tools", "pdf-tools", "# PDF\n\nThe second one.\n")
    _skill(base / "misc/skills/notes", "notes", "# Notes\n\nKeep notes.\n")
    (base / "misc/skills/notes/scripts").mkdir()
    (base / "misc/skills/notes/scripts/count.py").write_text(
        "from urllib.parse import quote\n\nVERSION = '~1.2'\nprint(quote('a b'))\n",
        encoding="utf-8",
    )
    (top / "README.md").write_text("# A collection\n", encoding="utf-8")
    return top
