"""Who reads a skills message: a model calling tools, or a person at a terminal.

The skills logic (`actions`, `catalog`) is shared by the MCP tools and by ``dpt-skills``.
Where a message tells the reader what to do next, the step differs by audience: a model
calls ``list_skills``, a person runs ``dpt-skills list``. The logic takes a `Voice` and
words that step through it; each edge picks its voice (`MODEL` for the tools, whose
wording is part of the tools' contract, `PERSON` for the command line). Nothing else in a
message changes with the audience.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Final

__all__ = ["MODEL", "PERSON", "Voice", "person"]


@dataclass(frozen=True, slots=True)
class Voice:
    """The audience-specific steps that skills messages name."""

    see_names: str
    """A sentence telling how to see the available skill names."""
    see_names_clause: str
    """The same step as a clause that follows a semicolon (lower-case start)."""
    create: str
    """How to create a skill, as a short parenthetical phrase."""
    fill_in: str
    """How to replace a new skill's TODO sections (ends a sentence)."""
    shows_new: str
    """When a newly created skill is listed (ends a sentence)."""
    skills_dir_setting: str
    """What sets the skills folder, as the reader would change it."""


MODEL: Final = Voice(
    see_names="Call list_skills to see the available names.",
    see_names_clause="call list_skills to see the available names",
    create="or call create_skill",
    fill_in="Replace the TODO sections with the real instructions using a file tool",
    shows_new="list_skills shows the skill from its next call",
    skills_dir_setting="DPTTOOLS_SKILLS_DIR",
)
"""Messages in tool answers: the reader is a model that calls the skills tools."""

PERSON: Final = Voice(
    see_names="Run `dpt-skills list` to see the available names.",
    see_names_clause="run `dpt-skills list` to see the available names",
    create="or run `dpt-skills new NAME --description TEXT`",
    fill_in="Open it in an editor and replace the TODO sections with the real instructions",
    shows_new=(
        "`dpt-skills list` shows it now, and the skills server's list_skills from its next call"
    ),
    skills_dir_setting="DPTTOOLS_SKILLS_DIR (or pass --skills-dir)",
)
"""Messages of ``dpt-skills``: the reader is a person at a terminal."""

_COMMANDS: Final = ("`dpt-skills list`", "`dpt-skills new NAME --description TEXT`")


def person(skills_dir: str | None = None) -> Voice:
    """`PERSON` for a command given ``--skills-dir`` `skills_dir`: every ``dpt-skills``
    command the messages suggest carries the same option (quoted for a POSIX shell), so
    it looks in the same folder; `PERSON` itself without one."""
    if skills_dir is None:
        return PERSON
    option = f" --skills-dir {shlex.quote(skills_dir)}"

    def with_option(text: str) -> str:
        for command in _COMMANDS:
            text = text.replace(command, f"{command[:-1]}{option}`")
        return text

    return replace(
        PERSON,
        see_names=with_option(PERSON.see_names),
        see_names_clause=with_option(PERSON.see_names_clause),
        create=with_option(PERSON.create),
        shows_new=with_option(PERSON.shows_new),
    )
