"""The toolkit's modules import one another in one direction only.

Two graphs: the imports that run when a module is loaded, over the whole package; and
every import statement (under TYPE_CHECKING and inside functions too) among every module
but the command line's (which builds agents; of it, only the terminal's ``ask`` approval
policy is imported by the library, inside the function that makes that policy)."""

from __future__ import annotations

import ast
from pathlib import Path

import doc_processing_toolkit

PACKAGE = Path(doc_processing_toolkit.__file__).parent
NAME = "doc_processing_toolkit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([NAME, *parts])


def imports(path: Path, *, everywhere: bool) -> set[str]:
    """The toolkit modules `path` imports: when it is loaded (not under TYPE_CHECKING,
    not inside a function), or `everywhere`."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree) if everywhere else tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith(NAME):
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(NAME))
    return found


def find_cycle(modules: dict[str, Path], *, everywhere: bool) -> None:
    graph = {
        name: {
            target
            for target in imports(path, everywhere=everywhere)
            if target in modules and target != name
        }
        for name, path in modules.items()
    }
    # A package's __init__ re-exporting its own submodules is not a cycle of concern;
    # a submodule importing a sibling goes through the package only by name.
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            cycle = [*visiting[visiting.index(name) :], name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        visiting.append(name)
        for target in sorted(graph[name]):
            if not name.startswith(target + "."):  # a module's own package __init__
                visit(target)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_module_level_imports_have_no_cycle() -> None:
    find_cycle({module_name(p): p for p in PACKAGE.rglob("*.py")}, everywhere=False)


def test_no_import_of_a_run_module_goes_back_even_for_type_checking() -> None:
    modules = {
        module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] not in ("cli.py", "cli_batch.py", "cli_approval.py")
    }
    find_cycle(modules, everywhere=True)


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
