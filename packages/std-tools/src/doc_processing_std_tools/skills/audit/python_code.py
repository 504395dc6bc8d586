"""The audit's reading of Python scripts: imports of network modules, and strings that
name the home folder, credential files or /proc.

Findings come from what Python itself would run: the source is parsed with `ast` after
the byte-order mark that Python skips, so one-line forms (``if True: import socket``,
``try: import socket``), imports inside functions, backslash continuations and
``__import__("socket")`` are all seen. Parsing is skipped only for ASCII source in which
no word such a finding needs appears at all (most scripts): a module's name must be
written out for Python to import it. Static reading has limits (a name built at run time
is not seen); the command-line page lists them. Pure: text in, findings out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Final

from ahocorasick_rs import AhoCorasick, Implementation

__all__ = ["NETWORK_MODULES", "python_findings"]

NETWORK_MODULES: Final = frozenset(
    {
        "socket",
        "ssl",
        "urllib",
        "urllib2",
        "urllib3",
        "requests",
        "httpx",
        "http",
        "aiohttp",
        "ftplib",
        "smtplib",
        "telnetlib",
        "paramiko",
        "websocket",
        "websockets",
        "xmlrpc",
    }
)
# Modules and names under a network package that reach no network.
_HARMLESS_MODULES: Final = frozenset({"urllib", "urllib.parse", "urllib.error", "http"})
_HARMLESS_NAMES: Final = {
    "urllib": frozenset({"parse", "error"}),
    "http": frozenset({"HTTPStatus", "HTTPMethod", "cookies"}),
}

CREDENTIAL_MARKERS: Final = (
    ".ssh",
    ".aws",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    ".netrc",
    ".git-credentials",
    ".gnupg",
    ".kube/config",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    "gh/hosts.yml",
    "gcloud/",
    "/run/secrets",
    "/var/run/secrets",
    "token.json",
    ".token",
)

# Words that some finding needs in the source (every credential marker holds one; the
# network modules come last, searched as whole words). ASCII source without any of them is
# not parsed. Other text is always parsed, since Python folds some characters into ASCII
# names (NFKC).
LITERAL_WORDS: Final = (
    "~",
    "home",
    "HOME",
    "USERPROFILE",
    "expanduser",
    "/proc",
    "ssh",
    "aws",
    "id_",
    "netrc",
    "credentials",
    "gnupg",
    "kube",
    "docker",
    "npmrc",
    "pypirc",
    "hosts.yml",
    "gcloud",
    "secrets",
    "token",
    *sorted(NETWORK_MODULES),
)
_LITERAL_ONLY: Final = LITERAL_WORDS[: -len(NETWORK_MODULES)]

# Every word at once: an Aho-Corasick automaton (see `_words_named`).
_WORDS: Final = AhoCorasick([*_LITERAL_ONLY, *NETWORK_MODULES], implementation=Implementation.DFA)
_LITERALS: Final = len(_LITERAL_ONLY)


def _words_named(text: str) -> tuple[bool, list[int]]:
    """(whether any literal word is in `text`, where a network module's name stands
    alone in it: "https" in a docstring is not "http"), for ASCII `text`. One pass of
    the automaton over the text, then a look at each word it found (most scripts: none)."""
    literal = False
    modules: list[int] = []
    for which, start, end in _WORDS.find_matches_as_indexes(text, overlapping=True):
        if which < _LITERALS:
            literal = True
            continue
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            modules.append(start)
    modules.sort()
    return literal, modules


# A path in the home folder: "~", "~/..." or "~user/...", never a version such as "~1.2".
_HOME_PATH: Final = re.compile(r"~(?:[A-Za-z_][\w.-]*)?(?:/|\\|$)")

PYTHON_WORDS: Final = {
    "python_network": "{what}: the script may reach the network (read statically).",
    "python_home": "{what}: the script may read or write the home folder (read statically).",
    "python_credentials": "{what}: the script may read credentials (read statically).",
    "python_proc": "{what}: the script may read other processes (read statically).",
}

Note = Callable[[str, int, str], None]


def _network(module: str, names: list[str] | None = None) -> bool:
    """True when importing `module` (or `names` from it) can reach the network."""
    top = module.split(".")[0]
    if top not in NETWORK_MODULES:
        return False
    if names is None:
        return module not in _HARMLESS_MODULES
    harmless = _HARMLESS_NAMES.get(module)
    if harmless is not None:
        return any(name not in harmless for name in names)
    return module not in _HARMLESS_MODULES


def _literal(value: str, line: int, note: Note) -> None:
    if _HOME_PATH.match(value) or value in ("HOME", "USERPROFILE"):
        note("python_home", line, f"names {value[:40]!r}")
    for marker in CREDENTIAL_MARKERS:
        if marker in value:
            note("python_credentials", line, f"names {marker!r}")
            break
    if value == "/proc" or value.startswith("/proc/"):
        note("python_proc", line, f"names {value[:40]!r}")


def _dynamic_import(node: ast.Call) -> str | None:
    """The module a ``__import__("x")`` or ``import_module("x")`` call names, or None."""
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if called not in ("__import__", "import_module") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _plain_import(text: str, places: list[int]) -> tuple[int, str] | None:
    """(line, what) of the first network import in a line that starts with ``import``
    or ``from`` (statements split at ``;``), among the lines at `places` (in order), or
    None. Only a line where a network module's name stands alone can import one. A
    shortcut only: when it finds nothing, the source is parsed, which sees every form."""
    end = -1
    for place in places:
        if place < end:
            continue  # on a line already read
        begin = text.rfind("\n", 0, place) + 1
        end = text.find("\n", place)
        end = len(text) if end < 0 else end
        line = text[begin:end]
        if line.rstrip().endswith(("\\", "(", ",")):
            continue  # continued: left to the parse
        for statement in line.split(";"):
            words = statement.replace(",", " , ").split()
            if len(words) < 2 or words[0] not in ("import", "from"):
                continue
            if words[0] == "from":
                names = [w for w in words[3:] if w not in (",", "as", "(", ")")]
                if len(words) > 2 and words[2] == "import" and _network(words[1], names):
                    return text.count("\n", 0, begin) + 1, f"imports from {words[1]}"
                continue
            parts = " ".join(words[1:]).split(",")
            for module in (part.split()[0] for part in parts if part.split()):
                if _network(module):
                    return text.count("\n", 0, begin) + 1, f"imports {module}"
    return None


def python_findings(text: str) -> Iterator[tuple[str, int, str]]:
    """(code, line, what) of the first finding of each code in the Python source `text`."""
    if text.startswith("\ufeff"):
        text = text[1:]  # Python skips the mark; the line numbers stay the same
    if text.isascii():
        literal, modules = _words_named(text)
        if not literal:
            if not modules:
                return
            # Only a network finding is possible: a plain import line is enough to say so.
            found = _plain_import(text, modules)
            if found is not None:
                yield "python_network", found[0], found[1]
                return
    # Other text is always parsed: Python folds some characters into ASCII names (NFKC).
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # Not Python we can read; the sandbox would fail to run it too.
    first: dict[str, tuple[int, str]] = {}

    def note(code: str, line: int, what: str) -> None:
        if code not in first:
            first[code] = (line, what)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _network(alias.name):
                    note("python_network", node.lineno, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _network(node.module, [alias.name for alias in node.names]):
                note("python_network", node.lineno, f"imports from {node.module}")
        elif isinstance(node, ast.Call):
            module = _dynamic_import(node)
            if module is not None and _network(module):
                note("python_network", node.lineno, f"imports {module[:40]!r} at run time")
        elif isinstance(node, ast.Attribute) and node.attr in ("expanduser", "home"):
            note("python_home", node.lineno, f"calls {node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            _literal(node.value, node.lineno, note)
    for code, (line, what) in sorted(first.items(), key=lambda item: item[1][0]):
        yield code, line, what
