"""The five skills operations of the contract as plain functions, free of MCP, and the
process-wide catalog they (and `search.search_skills`) read.

Each function takes the `Settings` to honour and either returns the text a tool answers
with or raises a `StdToolsError` whose message says what was wrong and how to fix it.
`tools.py` only wraps these for MCP.
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

from .. import _hidden, _io
from .._text import fit_json, truncate
from ..config import Settings
from ..errors import (
    AlreadyExistsError,
    BinaryFileError,
    ConfigError,
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    StdToolsError,
)
from ..paths import check_relative, confine, is_inside, names_nothing
from .catalog.reading import resource_files
from .catalog.scan import SKILL_FILE, Catalog, SkillRecord
from .core.audience import MODEL, Voice
from .core.frontmatter import NAME_RULE, is_valid_name, suggest_name
from .core.images import MAX_IMAGE_BYTES, SkillImage, image_type, is_whole_image
from .core.template import render_template, template_content
from .scripts.policy import OpenFolder, ScriptFile, ScriptPolicy
from .scripts.run import run_script, split_args
from .state import SkillsState

__all__ = [
    "MAX_LISTED_RESOURCES",
    "check_skill_name",
    "create_skill",
    "execute_skill_script",
    "find_skill",
    "list_resources",
    "load_skill",
    "load_skill_resource",
    "render_template",
]

MAX_LISTED_RESOURCES: Final = 50
"""At most this many files are named in load_skill's resource list."""


def find_skill(state: SkillsState, settings: Settings, skill_name: str) -> SkillRecord:
    """The listed skill named `skill_name`: tool calls reach exactly what list_skills lists.

    Raises:
        InvalidArgumentError: the name breaks the naming rule.
        NotFoundError: no listed skill has that name; the message says why when the
            catalog left a skill of that name out.
    """
    catalog = state.current(settings)
    if isinstance(skill_name, str) and not is_valid_name(skill_name):
        listed = catalog.get(skill_name)
        if listed is not None:
            raise InvalidArgumentError(
                f"The skill '{skill_name}' is listed, but its folder name breaks the naming "
                f"rule ({NAME_RULE}), so tool calls cannot reach it. Read its instructions "
                f"at {listed.path} with a file tool if you have one; the skill's owner should "
                f"rename the folder (for example to '{suggest_name(skill_name)}')."
            )
    check_skill_name(skill_name)
    record = catalog.get(skill_name)
    if record is None or record.root is None:
        raise _no_skill(settings, skill_name, catalog)
    return record


def check_skill_name(skill_name: str, voice: Voice = MODEL) -> str:
    """Return `skill_name` when it follows the naming rule.

    Raises:
        InvalidArgumentError: the name breaks the rule; the message states the rule and
            says, in `voice`, how to see the available names.
    """
    if not isinstance(skill_name, str) or not is_valid_name(skill_name):
        raise InvalidArgumentError(
            f"skill_name {skill_name!r} is not a valid skill name: use {NAME_RULE}, the "
            "same as the skill's folder name (for example 'invoice-extraction'). "
            f"{voice.see_names}"
        )
    return skill_name


def _attr(value: str) -> str:
    """An XML attribute value, always in double quotes."""
    return '"' + escape(value, {'"': "&quot;"}) + '"'


def _skill_folder(state: SkillsState, settings: Settings, skill_name: str) -> SkillRecord:
    record = find_skill(state, settings, skill_name)
    root = _root(record)
    if not (record.directory / SKILL_FILE).is_file():
        raise _no_skill(settings, skill_name, None)
    confine(root, record.folder, what="skill folder")
    return record


def _root(record: SkillRecord) -> Path:
    # `find_skill` returns only records that know their root.
    return record.root if record.root is not None else record.directory.parent


def _skill_relative(record: SkillRecord, relative: str, what: str) -> str:
    """`relative` (inside the skill's folder) as a path inside the skill's root, after
    the checks that need no disk access; links may lead anywhere in that root."""
    text = check_relative(record.directory, relative, what=what)
    # Accept Windows-style separators, as models sometimes write them.
    return record.folder + "/" + text.replace("\\", "/")


def _no_skill(settings: Settings, skill_name: str, catalog: Catalog | None) -> NotFoundError:
    roots = settings.skill_roots
    where = str(roots[0]) if len(roots) == 1 else "the skills folders"
    left_out = next(
        (
            d
            for d in (catalog.diagnostics if catalog is not None else ())
            if d.level == "error" and d.skill.rpartition("/")[2] == skill_name
        ),
        None,
    )
    if left_out is not None:
        return NotFoundError(
            f"The skill '{skill_name}' in {where} is not listed, so it cannot be loaded: "
            f"{left_out.message}"
        )
    return NotFoundError(
        f"There is no skill named '{skill_name}' in {where}; call "
        "list_skills to see the available names (the name is the skill's folder name)."
    )


def _skill_md_text(data: bytes, what: str) -> str:
    """SKILL.md's `data` (read by `_read_file`) as text with Unix line ends.

    Raises:
        BinaryFileError: the file is binary or not UTF-8 (the rule the catalog applies to
            SKILL.md too, so a listed skill always loads).
    """
    text, _ = _io.decode_utf8(
        data, what, hint="a SKILL.md must be text: save it as UTF-8 without NUL bytes."
    )
    return text.replace("\r\n", "\n")


def _read_file(
    state: SkillsState,
    settings: Settings,
    root: Path,
    relative: str,
    what: str,
    *,
    missing: StdToolsError,
    folder: StdToolsError,
    record: SkillRecord | None = None,
) -> bytes:
    """The bytes of the regular file at `relative` inside the skills folder `root`. With a
    skills lock, the bytes of `record`'s file must be those the lock holds: they are
    checked after the read, and served as read.

    Read through `_io`: no link is followed by name, so the path stays inside the skills
    folder even while links change; the checks apply to the open file.

    Raises:
        `missing`: nothing is there. `folder`: it is a folder.
        NotRegularFileError: a named pipe, socket or device.
        FileTooLargeError: the file is over DPTTOOLS_MAX_FILE_SIZE_MB.
    """
    _, data, _ = _io.read_bytes(
        root,
        relative,
        what=what,
        shown=what,
        limit=settings.max_file_size_bytes,
        missing=missing,
        folder=folder,
    )
    if record is not None and settings.skills_lock is not None:
        in_skill = relative.removeprefix(record.folder + "/")
        state.pinning(settings.skills_lock).check_bytes(record, in_skill, data)
    return data


def _file_kind(root: Path, relative: str) -> str | None:
    """How load_skill marks a listed file: ``image`` (load_skill_resource returns it as
    an image), ``binary`` (neither text nor such an image), or None for text, told by
    its first `_io.SNIFF_BYTES` bytes. A file that cannot be opened is not marked: the
    read says why."""
    try:
        _, head, size = _io.read_bytes(
            root,
            relative,
            what="resource",
            shown="resource",
            limit=sys.maxsize,
            missing=NotFoundError("gone"),
            folder=InvalidArgumentError("a folder"),
            head=_io.SNIFF_BYTES,
        )
    except (StdToolsError, OSError):
        return None
    if image_type(head) is not None:
        return "image" if size <= MAX_IMAGE_BYTES else "binary"
    if _io.is_binary(head):
        return "binary"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut at the end of the sniffed bytes is still text.
        if len(head) < _io.SNIFF_BYTES or exc.start < len(head) - 3:
            return "binary"
    return None


def list_resources(folder: Path, skills_dir: Path) -> list[str]:
    """Every file of a skill folder and its immediate subfolders, relative and sorted.

    Hidden names, ``__pycache__``, ``node_modules``, the SKILL.md itself and symbolic links
    leading outside `skills_dir` are left out (see `reading.resource_files`).
    """
    return resource_files(folder, skills_dir)[0]


def load_skill(state: SkillsState, settings: Settings, skill_name: str) -> str:
    """The skill's SKILL.md wrapped in ``<skill_content>``, with its resource list."""
    record = _skill_folder(state, settings, skill_name)
    folder = record.directory
    # The SKILL.md itself may be a symbolic link; it too must stay inside the skills folder.
    absent = _no_skill(settings, skill_name, None)
    what = f"The SKILL.md of '{skill_name}'"
    data = _read_file(
        state,
        settings,
        _root(record),
        f"{record.folder}/{SKILL_FILE}",
        what,
        missing=absent,
        folder=absent,
        record=record,
    )
    text = _skill_md_text(data, what)
    resources, outside = resource_files(folder, _root(record))
    limit = settings.output_truncation_limit
    head = f"<skill_content name={_attr(skill_name)} directory={_attr(str(folder))}>\n"
    shown = resources[:MAX_LISTED_RESOURCES]
    kinds = {
        path: kind
        for path in shown
        if (kind := _file_kind(_root(record), f"{record.folder}/{path}")) is not None
    }
    tail = _resources_tail(folder, resources, shown, kinds, outside)
    # Hidden characters are shown escaped, and said so before the instructions.
    escaped = _hidden.escape(text.rstrip("\n"))
    if escaped.count:
        head += _hidden.note(escaped.count)
    # The file list gives way before the instructions: it may take half of the limit.
    body = escaped.text
    while (
        shown and len(head) + len(tail) + len(body) > limit and len(head) + len(tail) > limit // 2
    ):
        shown = shown[: len(shown) // 2]
        tail = _resources_tail(folder, resources, shown, kinds, outside)
    body = truncate(
        body,
        max(limit - len(head) - len(tail), 0),
        hint=f"read the whole file with load_skill_resource('{skill_name}', 'SKILL.md')",
    )
    return head + body + tail


def _resources_tail(
    folder: Path,
    resources: list[str],
    shown: list[str],
    kinds: dict[str, str],
    outside: list[str],
) -> str:
    """The end of load_skill's answer: the list of files `shown` (of `resources`), each
    image or binary file marked with its kind (see `_file_kind`), then a note naming the
    links that lead outside the skills folder (`outside`; never where they point)."""
    lines = [f"<skill_resources count={_attr(str(len(resources)))}>"]
    lines.extend(
        f"<file kind={_attr(kinds[path])}>{escape(path)}</file>"
        if path in kinds
        else f"<file>{escape(path)}</file>"
        for path in shown
    )
    if len(resources) > len(shown):
        lines.append(
            f"<more>{len(resources) - len(shown)} more files are not listed; read any file "
            "with load_skill_resource.</more>"
        )
    lines.append("</skill_resources>")
    if outside:
        named = outside[:MAX_LISTED_RESOURCES]
        more = len(outside) - len(named)
        lines.extend(
            f"{escape(path)} (a link leading outside the skills folder, not readable)"
            for path in named
        )
        if more:
            lines.append(f"{more} more links leading outside the skills folder, not readable.")
    marked = {kinds[path] for path in shown if path in kinds}
    notes = []
    if "image" in marked:
        notes.append('load_skill_resource shows you a file of kind="image" as an image. ')
    if "binary" in marked:
        notes.append(
            'A file of kind="binary" cannot be read: use it through the skill\'s scripts '
            "(execute_skill_script) or by its path where the instructions say. "
        )
    return (
        "\n\n" + "\n".join(lines) + "\n" + "".join(notes) + "Relative paths in these "
        f"instructions resolve against {escape(str(folder))}; read files with "
        "load_skill_resource and run scripts with execute_skill_script.\n"
        "</skill_content>"
    )


def load_skill_resource(
    state: SkillsState, settings: Settings, skill_name: str, resource_path: str
) -> str | SkillImage:
    """One file inside the skill's folder: its text, or the image itself for a PNG, JPEG,
    GIF or WebP file of at most `MAX_IMAGE_BYTES`.

    Raises:
        BinaryFileError: any other binary (or non-UTF-8) file; the message says what the
            model can do with it instead.
        FileTooLargeError: an image over `MAX_IMAGE_BYTES`, or any file over
            DPTTOOLS_MAX_FILE_SIZE_MB.
    """
    record = _skill_folder(state, settings, skill_name)
    relative = _skill_relative(record, resource_path, "resource_path")
    what = f"resource_path {resource_path!r}"
    folder = InvalidArgumentError(
        f"{what} is a folder in skill '{skill_name}'; pass the path of a file in it "
        "(load_skill lists the skill's files)."
    )
    missing = NotFoundError(
        f"{what} does not exist in skill '{skill_name}'; load_skill lists the skill's "
        "files, with paths relative to its folder."
    )
    data = _read_file(
        state,
        settings,
        _root(record),
        relative,
        what,
        missing=missing,
        folder=folder,
        record=record,
    )
    mime_type = image_type(data)
    if mime_type is not None:
        if len(data) > MAX_IMAGE_BYTES:
            raise FileTooLargeError(
                f"{what} is an image of {_io.human_size(len(data))}; images are shown up "
                f"to {_io.human_size(MAX_IMAGE_BYTES)}. Use it through the skill's "
                "instructions or scripts (execute_skill_script), by its path "
                f"{record.directory / resource_path}."
            )
        if not is_whole_image(data, mime_type):
            raise BinaryFileError(
                f"{what} starts like an image ({mime_type}) but is cut short or damaged, so "
                "it is not shown (a model would refuse it); the skill's author should save "
                "it again."
            )
        return SkillImage(data=data, mime_type=mime_type)
    absolute = record.directory / resource_path
    text, _ = _io.decode_utf8(
        data,
        what,
        hint="load_skill_resource returns text files, and PNG, JPEG, GIF and WebP images, "
        "and this is neither. Use it as the skill's instructions say: a script of the "
        f"skill (execute_skill_script) can read it at {absolute}, or pass that path to a "
        "tool that takes one.",
    )
    escaped = _hidden.escape(text.replace("\r\n", "\n"))
    return truncate(
        (_hidden.note(escaped.count) + "\n" if escaped.count else "") + escaped.text,
        settings.output_truncation_limit,
        hint="the file is longer than DPTTOOLS_OUTPUT_TRUNCATION_LIMIT allows",
    )


async def execute_skill_script(
    state: SkillsState, settings: Settings, skill_name: str, script_path: str, args: str = ""
) -> str:
    """Run a ``.py`` file of the skill and return ``{stdout, stderr, exit_code}`` (and
    ``changes``, when it changed the workspace under bubblewrap) as JSON
    of at most DPTTOOLS_OUTPUT_TRUNCATION_LIMIT characters.

    The script runs under the DPTTOOLS_SCRIPT_* policy (environment, sandbox, limits).
    The path is walked through `_io` (no link followed by name, none leading out of the
    skills folder), and what runs is the code of the file that walk opened, in the folder
    it opened (see `scripts.ScriptFile`): a link swapped in meanwhile changes nothing.
    """
    record = _skill_folder(state, settings, skill_name)
    argv = split_args(args)
    with ExitStack() as held:
        script = _open_script(held, state, settings, record, script_path)
        result = await run_script(
            script,
            argv,
            time_limit=settings.sandbox_timeout,
            # Half the limit each, so that both streams show; the JSON is then held to it.
            output_limit=max(settings.output_truncation_limit // 2, 1),
            policy=ScriptPolicy.from_settings(settings),
        )
    return fit_json(
        # The lists of changed paths take at most a quarter of the limit.
        result.to_payload(room=max(settings.output_truncation_limit // 4, 200)),
        settings.output_truncation_limit,
        hint="have the script write long output to a file and read that file instead",
        indent=None,
    )


def _open_script(
    held: ExitStack, state: SkillsState, settings: Settings, record: SkillRecord, script_path: str
) -> ScriptFile:
    """Walk to `script_path` in the skill through `_io`, check it and read it; the
    descriptors of its folder and of the skill's folder stay open in `held`."""
    root = _root(record)
    relative = _skill_relative(record, script_path, "script_path")
    missing = NotFoundError(
        f"script_path {script_path!r} does not exist in skill '{record.name}'; load_skill "
        "lists the skill's files, with paths relative to its folder."
    )
    try:
        skill_dir = _open_skill_dir(held, record)
        location = held.enter_context(_io.locate(root, relative, what="script_path"))
    except OSError as exc:
        if names_nothing(exc):
            raise missing from None
        raise
    if Path(location.name).suffix != ".py":
        raise InvalidArgumentError(
            f"script_path {script_path!r} is not a Python file; only .py scripts of the "
            "skill can be run (load_skill lists its files)."
        )
    source, _ = _io.read_at(
        location,
        shown=f"script_path {script_path!r}",
        limit=settings.max_file_size_bytes,
        missing=missing,
        folder=InvalidArgumentError(
            f"script_path {script_path!r} is a folder in skill '{record.name}'; pass the "
            "path of a .py file in it (load_skill lists the skill's files)."
        ),
    )
    if settings.skills_lock is not None:
        # Right before it runs: the bytes that will run are the bytes the lock holds.
        in_skill = relative.removeprefix(record.folder + "/")
        state.pinning(settings.skills_lock).check_script(record, in_skill, source)
    real_root = Path(os.path.realpath(root))
    return ScriptFile(
        real_root.joinpath(*location.folders, location.name),
        source,
        OpenFolder(real_root.joinpath(*location.folders), location.dir_fd),
        skill_dir,
    )


def _open_skill_dir(held: ExitStack, record: SkillRecord) -> OpenFolder:
    """The skill's folder, walked to through `_io` and opened; `held` closes it."""
    root = _root(record)
    with _io.locate(root, record.folder, what="skill folder") as location:
        fd = _io.open_folder(location)
        held.callback(os.close, fd)
        real = Path(os.path.realpath(root)).joinpath(*location.folders, location.name)
    return OpenFolder(real, fd)


def create_skill(
    state: SkillsState, settings: Settings, skill_name: str, description: str, voice: Voice = MODEL
) -> str:
    """Create ``<skills_dir>/<skill_name>/SKILL.md`` from the template; never overwrite.

    The answer (and an error about the name) says what to do next in `voice`.
    """
    check_skill_name(skill_name, voice)
    if settings.skills_dir_refusal is not None:
        raise ConfigError(settings.skills_dir_refusal)
    content = template_content(skill_name, description)
    skills_dir = settings.skills_dir
    folder = skills_dir / skill_name
    target = folder / SKILL_FILE
    elsewhere = state.scan(settings).get(skill_name) if len(settings.skill_roots) > 1 else None
    if elsewhere is not None:
        raise AlreadyExistsError(
            f"A skill named '{skill_name}' already exists in {elsewhere.directory}; nothing "
            "was changed. Pick another name, or edit that skill's SKILL.md."
        )
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
        f"body. {_fill_in(settings, folder, voice)}; {voice.shows_new}."
    )


def _fill_in(settings: Settings, folder: Path, voice: Voice) -> str:
    """How to replace the TODO sections: with a file tool only when this server's file
    tools can reach the new skill (they are refused without a workspace, and confined to
    the workspace otherwise)."""
    if voice is not MODEL:
        return voice.fill_in
    if settings.workspace_refusal is None and is_inside(folder, settings.workspace_dir):
        relative = folder.relative_to(settings.workspace_dir).as_posix()
        return f"{voice.fill_in} (its path in the workspace is {relative}/{SKILL_FILE})"
    return (
        "This server's file tools cannot reach that folder (it is outside their workspace), "
        "so ask the user to replace the TODO sections with the real instructions, or use a "
        "file tool of the host that can write there"
    )
