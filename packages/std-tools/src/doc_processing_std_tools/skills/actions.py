"""The five skills operations as plain functions, free of MCP.

Each function takes the `Settings` to honour and either returns the text a tool answers
with or raises a `StdToolsError` whose message says what was wrong and how to fix it.
`server.py` only wraps these for MCP.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

import yaml

from .. import _io
from .._text import fit_json, truncate
from ..config import Settings
from ..errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    StdToolsError,
)
from ..paths import check_relative, confine, is_inside
from .catalog import SKILL_FILE, Catalog, SkillCatalog, is_hidden_name
from .frontmatter import (
    MAX_DESCRIPTION_LENGTH,
    NAME_RULE,
    check_fields,
    is_valid_name,
    parse_skill_md,
)
from .scripts import ScriptPolicy, run_script, split_args

__all__ = [
    "MAX_LISTED_RESOURCES",
    "cached",
    "check_skill_name",
    "clear_cache",
    "create_skill",
    "execute_skill_script",
    "list_resources",
    "load_skill",
    "load_skill_resource",
    "render_template",
    "scan",
]

MAX_LISTED_RESOURCES: Final = 50
"""At most this many files are named in load_skill's resource list."""

_catalog = SkillCatalog()


def scan(settings: Settings) -> Catalog:
    """The catalog of ``settings.skills_dir`` from the process-wide, mtime-keyed cache."""
    return _catalog.scan(settings.skills_dir, max_bytes=settings.max_file_size_bytes)


def cached(settings: Settings) -> Catalog | None:
    """The catalog of ``settings.skills_dir`` when it is known to be unchanged, else None.

    Costs only ``stat`` calls; see `SkillCatalog.peek`.
    """
    return _catalog.peek(settings.skills_dir, max_bytes=settings.max_file_size_bytes)


def clear_cache() -> None:
    """Forget every catalog read so far; the next `scan` reads every SKILL.md again."""
    _catalog.clear()


def check_skill_name(skill_name: str) -> str:
    """Return `skill_name` when it follows the naming rule.

    Raises:
        InvalidArgumentError: the name breaks the rule; the message states the rule.
    """
    if not isinstance(skill_name, str) or not is_valid_name(skill_name):
        raise InvalidArgumentError(
            f"skill_name {skill_name!r} is not a valid skill name: use {NAME_RULE}, the "
            "same as the skill's folder name (for example 'invoice-extraction'). Call "
            "list_skills to see the available names."
        )
    return skill_name


def _attr(value: str) -> str:
    """An XML attribute value, always in double quotes."""
    return '"' + escape(value, {'"': "&quot;"}) + '"'


def _skill_folder(settings: Settings, skill_name: str) -> Path:
    check_skill_name(skill_name)
    folder = settings.skills_dir / skill_name
    if not (folder / SKILL_FILE).is_file():
        raise _no_skill(settings, skill_name)
    confine(settings.skills_dir, skill_name, what="skill folder")
    return folder


def _skill_relative(settings: Settings, skill_name: str, relative: str, what: str) -> str:
    """`relative` (inside the skill's folder) as a path inside the skills folder, after
    the checks that need no disk access; links may lead anywhere in the skills folder."""
    text = check_relative(settings.skills_dir / skill_name, relative, what=what)
    # Accept Windows-style separators, as models sometimes write them.
    return skill_name + "/" + text.replace("\\", "/")


def _inside_skill(settings: Settings, skill_name: str, relative: str, what: str) -> Path:
    """Resolve `relative` inside the skill's folder; symlinks may not leave the skills folder."""
    return confine(
        settings.skills_dir, _skill_relative(settings, skill_name, relative, what), what=what
    )


def _no_skill(settings: Settings, skill_name: str) -> NotFoundError:
    return NotFoundError(
        f"There is no skill named '{skill_name}' in {settings.skills_dir}; call "
        "list_skills to see the available names (the name is the skill's folder name)."
    )


def _read_text(
    settings: Settings,
    relative: str,
    what: str,
    *,
    missing: StdToolsError,
    folder: StdToolsError,
) -> str:
    """The text of the regular file at `relative` inside the skills folder.

    Read through `_io`: no link is followed by name, so the path stays inside the skills
    folder even while links change; the checks apply to the open file.

    Raises:
        `missing`: nothing is there. `folder`: it is a folder.
        NotRegularFileError: a named pipe, socket or device.
        FileTooLargeError: the file is over DPTTOOLS_MAX_FILE_SIZE_MB.
        BinaryFileError: the file is binary or not UTF-8 (the rule the catalog applies to
            SKILL.md too, so a listed skill always loads).
    """
    _, data, _ = _io.read_bytes(
        settings.skills_dir,
        relative,
        what=what,
        shown=what,
        limit=settings.max_file_size_bytes,
        missing=missing,
        folder=folder,
    )
    text, _ = _io.decode_utf8(
        data,
        what,
        hint="only text files (Markdown, JSON, CSV, source code, ...) can be read; save it "
        "as UTF-8, or use a tool made for its format.",
    )
    return text.replace("\r\n", "\n")


def list_resources(folder: Path, skills_dir: Path) -> list[str]:
    """Every file of a skill folder and its immediate subfolders, relative and sorted.

    Hidden names, ``__pycache__``, ``node_modules``, the SKILL.md itself and symbolic links
    leading outside `skills_dir` are left out.
    """
    real_root = skills_dir.resolve()
    found: list[str] = []

    def visible_files(directory: Path, prefix: str, depth: int) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if is_hidden_name(entry.name):
                continue
            try:
                if entry.is_symlink() and not is_inside(Path(entry.path), real_root):
                    continue
                if entry.is_file():
                    if depth or entry.name != SKILL_FILE:
                        found.append(prefix + entry.name)
                elif entry.is_dir() and depth == 0:
                    visible_files(Path(entry.path), f"{entry.name}/", 1)
            except OSError:
                continue

    visible_files(folder, "", 0)
    found.sort()
    return found


def load_skill(settings: Settings, skill_name: str) -> str:
    """The skill's SKILL.md wrapped in ``<skill_content>``, with its resource list."""
    folder = _skill_folder(settings, skill_name)
    # The SKILL.md itself may be a symbolic link; it too must stay inside the skills folder.
    absent = _no_skill(settings, skill_name)
    what = f"The SKILL.md of '{skill_name}'"
    text = _read_text(settings, f"{skill_name}/{SKILL_FILE}", what, missing=absent, folder=absent)
    resources = list_resources(folder, settings.skills_dir)
    limit = settings.output_truncation_limit
    head = f"<skill_content name={_attr(skill_name)} directory={_attr(str(folder))}>\n"
    shown = resources[:MAX_LISTED_RESOURCES]
    tail = _resources_tail(folder, resources, shown)
    # The file list gives way before the instructions: it may take half of the limit.
    body = text.rstrip("\n")
    while (
        shown and len(head) + len(tail) + len(body) > limit and len(head) + len(tail) > limit // 2
    ):
        shown = shown[: len(shown) // 2]
        tail = _resources_tail(folder, resources, shown)
    body = truncate(
        body,
        max(limit - len(head) - len(tail), 0),
        hint=f"read the whole file with load_skill_resource('{skill_name}', 'SKILL.md')",
    )
    return head + body + tail


def _resources_tail(folder: Path, resources: list[str], shown: list[str]) -> str:
    """The end of load_skill's answer: the list of files `shown` (of `resources`)."""
    lines = [f"<skill_resources count={_attr(str(len(resources)))}>"]
    lines.extend(f"<file>{escape(path)}</file>" for path in shown)
    if len(resources) > len(shown):
        lines.append(
            f"<more>{len(resources) - len(shown)} more files are not listed; read any file "
            "with load_skill_resource.</more>"
        )
    lines.append("</skill_resources>")
    return (
        "\n\n" + "\n".join(lines) + "\n"
        f"Relative paths in these instructions resolve against {escape(str(folder))}; read "
        "files with load_skill_resource and run scripts with execute_skill_script.\n"
        "</skill_content>"
    )


def load_skill_resource(settings: Settings, skill_name: str, resource_path: str) -> str:
    """The text of one file inside the skill's folder."""
    _skill_folder(settings, skill_name)
    relative = _skill_relative(settings, skill_name, resource_path, "resource_path")
    what = f"resource_path {resource_path!r}"
    folder = InvalidArgumentError(
        f"{what} is a folder in skill '{skill_name}'; pass the path of a file in it "
        "(load_skill lists the skill's files)."
    )
    missing = NotFoundError(
        f"{what} does not exist in skill '{skill_name}'; load_skill lists the skill's "
        "files, with paths relative to its folder."
    )
    return truncate(
        _read_text(settings, relative, what, missing=missing, folder=folder),
        settings.output_truncation_limit,
        hint="the file is longer than DPTTOOLS_OUTPUT_TRUNCATION_LIMIT allows",
    )


async def execute_skill_script(
    settings: Settings, skill_name: str, script_path: str, args: str = ""
) -> str:
    """Run a ``.py`` file of the skill and return ``{stdout, stderr, exit_code}`` as JSON
    of at most DPTTOOLS_OUTPUT_TRUNCATION_LIMIT characters.

    The script runs under the DPTTOOLS_SCRIPT_* policy (environment, sandbox, limits).
    """
    folder = _skill_folder(settings, skill_name)
    path = _inside_skill(settings, skill_name, script_path, "script_path")
    if path.suffix != ".py":
        raise InvalidArgumentError(
            f"script_path {script_path!r} is not a Python file; only .py scripts of the "
            "skill can be run (load_skill lists its files)."
        )
    if not path.is_file():
        raise NotFoundError(
            f"script_path {script_path!r} does not exist in skill '{skill_name}'; load_skill "
            "lists the skill's files, with paths relative to its folder."
        )
    argv = split_args(args)
    result = await run_script(
        path,
        argv,
        time_limit=settings.sandbox_timeout,
        # Half the limit each, so that both streams show; the JSON is then held to it.
        output_limit=max(settings.output_truncation_limit // 2, 1),
        policy=ScriptPolicy.from_settings(settings),
        skill_dir=folder,
    )
    return fit_json(
        result.to_payload(),
        settings.output_truncation_limit,
        hint="have the script write long output to a file and read that file instead",
        indent=None,
    )


def render_template(skill_name: str, description: str) -> str:
    """The template SKILL.md that create_skill writes: frontmatter and a TODO body."""
    frontmatter = yaml.safe_dump(
        {"name": skill_name, "description": description},
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
    )
    title = skill_name.replace("-", " ").capitalize()
    return (
        f"---\n{frontmatter}---\n\n# {title}\n\n"
        "TODO: write the instructions an agent follows when this skill applies.\n\n"
        "## When to use\n\nTODO: the tasks and inputs this skill is meant for.\n\n"
        "## Steps\n\n1. TODO: the first step.\n\n"
        "## Files\n\nTODO: name the files under scripts/ and references/ and when to use "
        "each.\n"
    )


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


def create_skill(settings: Settings, skill_name: str, description: str) -> str:
    """Create ``<skills_dir>/<skill_name>/SKILL.md`` from the template; never overwrite."""
    check_skill_name(skill_name)
    text = _check_description(description)
    content = render_template(skill_name, text)
    parsed = parse_skill_md(content)
    fields, problems = check_fields(parsed.fields or {}, skill_name)
    if fields is None or parsed.diagnostics or problems:
        raise InvalidArgumentError(
            "description cannot be written as SKILL.md frontmatter; use plain text."
        )
    skills_dir = settings.skills_dir
    folder = skills_dir / skill_name
    target = folder / SKILL_FILE
    if os.path.lexists(target) or (folder.is_symlink() and not folder.is_dir()):
        raise AlreadyExistsError(
            f"A skill named '{skill_name}' already exists in {skills_dir}; nothing was "
            "changed. Pick another name, or edit that skill's SKILL.md."
        )
    skills_dir.mkdir(parents=True, exist_ok=True)
    try:
        # Through `_io`: the folder is entered by descriptor, so a link swapped in for it
        # cannot lead the write outside the skills folder.
        with _io.locate(
            skills_dir, f"{skill_name}/{SKILL_FILE}", what="skill folder", allow_missing=True
        ) as location:
            _io.write_atomically(
                location, content.encode("utf-8"), mode=_io.new_file_mode(), replace=False
            )
    except FileExistsError:
        raise AlreadyExistsError(
            f"A skill named '{skill_name}' was created in {skills_dir} at the same time; "
            "nothing was overwritten."
        ) from None
    except NotADirectoryError:
        raise AlreadyExistsError(
            f"{folder} exists and is not a folder; nothing was changed. Pick another "
            "name for the skill."
        ) from None
    return (
        f"Created skill '{skill_name}' in {folder}: {target} holds the frontmatter and a TODO "
        "body. Replace the TODO sections with the real instructions using a file tool; "
        "list_skills shows the skill from its next call."
    )
