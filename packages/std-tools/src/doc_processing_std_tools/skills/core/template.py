"""The SKILL.md that a new skill starts from (create_skill, ``dpt-skills new``).

`template_content` checks the description, writes the frontmatter with PyYAML (so any
text is quoted as YAML needs) and the TODO body of `lint.template_body`, and reads the
result back with the catalog's own parser: what is written is always a listed skill.
"""

from __future__ import annotations

import yaml

from ...errors import InvalidArgumentError
from .frontmatter import MAX_DESCRIPTION_LENGTH, check_fields, parse_skill_md
from .lint import template_body

__all__ = ["render_template", "template_content"]


def render_template(skill_name: str, description: str) -> str:
    """The template SKILL.md that create_skill writes: frontmatter and a TODO body."""
    frontmatter = yaml.safe_dump(
        {"name": skill_name, "description": description},
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
    )
    title = skill_name.replace("-", " ").capitalize()
    return f"---\n{frontmatter}---\n\n{template_body(title)}"


def _check_description(description: str) -> str:
    text = description.strip() if isinstance(description, str) else ""
    if not text:
        raise InvalidArgumentError(
            "description is empty; pass one or two sentences saying what the skill does "
            "and when to use it."
        )
    if len(text) > MAX_DESCRIPTION_LENGTH:
        raise InvalidArgumentError(
            f"description is {len(text)} characters long; the limit is "
            f"{MAX_DESCRIPTION_LENGTH}. Shorten it and move details into the instructions."
        )
    return text


def template_content(skill_name: str, description: str) -> str:
    """The template SKILL.md for `skill_name` (a name already checked) and `description`.

    Raises:
        InvalidArgumentError: the description is empty, too long, or cannot be written
            as frontmatter that reads back as it was given.
    """
    content = render_template(skill_name, _check_description(description))
    parsed = parse_skill_md(content)
    fields, problems = check_fields(parsed.fields or {}, skill_name)
    if fields is None or parsed.diagnostics or problems:
        raise InvalidArgumentError(
            "description cannot be written as SKILL.md frontmatter; use plain text."
        )
    return content
