"""Neither package's modules import one another in a circle, counting every kind of
import: at module level, under TYPE_CHECKING, inside functions, and ``import_module``
calls that name their module. A module's import of its own package (whose
``__init__`` always runs first) is not counted.

The graph is read from the source with `ast`; every circle found is reported at once,
each as its modules (a strongly connected part of the graph) and one path around it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import doc_processing_std_tools
import doc_processing_toolkit

PACKAGE = Path(doc_processing_toolkit.__file__).parent
NAME = "doc_processing_toolkit"
STD_TOOLS = Path(doc_processing_std_tools.__file__).parent


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([root.name, *parts])


def _resolve(package: str, level: int, module: str | None) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in `package`."""
    if not level:
        return module or ""
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{module}" if module else base


def _import_module_target(node: ast.Call, package: str) -> str | None:
    """The module an ``import_module("name"[, __name__])`` call names, when a constant."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    first = node.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    name = first.value
    if not name.startswith("."):
        return name
    level = len(name) - len(name.lstrip("."))
    return _resolve(package, level, name.lstrip(".") or None)


def imports(path: Path, *, everywhere: bool, root: Path = PACKAGE) -> set[str]:
    """The modules of the package at `root` that `path` imports: when it is loaded (not
    under TYPE_CHECKING, not inside a function), or `everywhere`."""
    top = root.name
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree) if everywhere else tree.body:
        if isinstance(node, ast.ImportFrom):
            target = _resolve(package, node.level, node.module)
            if target.startswith(top):
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(top))
        elif everywhere and isinstance(node, ast.Call):
            called = _import_module_target(node, package)
            if called is not None and called.startswith(top):
                found.add(called)
    return found


def import_graph(root: Path, *, everywhere: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (its own packages left out)."""
    modules = {module_name(path, root): path for path in root.rglob("*.py")}
    return {
        name: {
            target
            for target in imports(path, everywhere=everywhere, root=root)
            if target in modules and target != name and not name.startswith(target + ".")
        }
        for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle of `graph`: each strongly connected part of more than one
    module (every module of it imports every other, through the others), as its sorted
    modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[set[str]] = []

    def connect(name: str) -> None:  # Tarjan's algorithm
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in sorted(graph[name]):
            if target not in index:
                connect(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            part: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.add(member)
                if member == name:
                    break
            if len(part) > 1:
                parts.append(part)

    for name in sorted(graph):
        if name not in index:
            connect(name)
    return sorted(sorted(part) for part in parts)


def _path_around(graph: dict[str, set[str]], part: set[str]) -> list[str]:
    """A shortest way from the part's first module back to itself, within the part."""
    start = min(part)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for name in frontier:
            for target in sorted(graph[name] & part):
                if target == start:
                    path = [name]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = name
                    following.append(target)
        frontier = following
    raise AssertionError(f"{sorted(part)} is not a circle")


def describe(graph: dict[str, set[str]], found: list[list[str]]) -> str:
    """One line per circle: its modules, and one way around it."""
    return "\n".join(
        f"import circle of {len(part)} modules ({', '.join(part)}), one way around it: "
        + " -> ".join(_path_around(graph, set(part)))
        for part in found
    )


@pytest.mark.parametrize(
    "root",
    [
        pytest.param(PACKAGE, id="toolkit"),
        pytest.param(STD_TOOLS, id="std-tools"),
    ],
)
def test_no_import_circle_counting_every_kind_of_import(root: Path) -> None:
    graph = import_graph(root)
    found = circles(graph)
    assert found == [], describe(graph, found)


def test_the_circle_finder_reports_every_circle_and_each_kind_of_import(
    tmp_path: Path,
) -> None:
    """A package with one circle per kind of import, and one import of its own package
    (not a circle): each circle is found, and only those."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import top\n",
        "top.py": "from .sub import inner\n",
        "sub/__init__.py": "",
        "sub/inner.py": "from .. import top\nfrom . import other\n",
        "sub/other.py": "import pkg\nfrom .. import sub\n",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n",
        "b.py": "from .a import X\n",
        "late.py": "def f():\n    from . import lazy\n",
        "lazy.py": "from importlib import import_module\n"
        "def g():\n    return import_module('.late', __package__)\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    graph = import_graph(root)
    assert circles(graph) == [
        ["pkg.a", "pkg.b"],
        ["pkg.late", "pkg.lazy"],
        ["pkg.sub.inner", "pkg.top"],
    ]
    assert describe(graph, [["pkg.sub.inner", "pkg.top"]]) == (
        "import circle of 2 modules (pkg.sub.inner, pkg.top), one way around it: "
        "pkg.sub.inner -> pkg.top -> pkg.sub.inner"
    )
    assert circles(import_graph(root, everywhere=False)) == [["pkg.sub.inner", "pkg.top"]]


def test_the_batch_package_never_imports_the_agent() -> None:
    """The batch engines know the agent through `BatchAgent` only: no module of batch/
    imports agent.py, not even for type checking or inside a function."""
    batch = sorted((PACKAGE / "batch").glob("*.py"))
    assert batch
    offenders = {
        module_name(path): sorted(
            target
            for target in imports(path, everywhere=True)
            if target == f"{NAME}.agent" or target.startswith(f"{NAME}.agent.")
        )
        for path in batch
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_module_imports_the_package_root() -> None:
    """``__version__`` lives in ``_version``; no module of the package reads a name from
    the package root (whose lazy names would import the module asking)."""
    offenders: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "__init__.py":
            continue
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                if target != NAME:
                    continue
                for alias in node.names:
                    if (
                        not (PACKAGE / alias.name).is_dir()
                        and not (PACKAGE / f"{alias.name}.py").is_file()
                    ):
                        offenders.append(f"{name} imports {alias.name} from the package root")
            elif isinstance(node, ast.Import) and any(a.name == NAME for a in node.names):
                offenders.append(f"{name} imports the package root")
    assert offenders == []
