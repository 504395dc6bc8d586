"""Each document format is declared by its own module (name, suffixes, content check,
reader) and listed once in `formats.FORMATS`; `source` knows no format (issue 33).
Adding a format is its module and one line of the table."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from doc_processing_std_tools.documents import formats, source
from doc_processing_std_tools.documents.formats import FORMATS, READERS
from doc_processing_std_tools.documents.reader import DocumentFormat
from doc_processing_std_tools.documents.source import open_source
from doc_processing_std_tools.documents.text import TextReader
from doc_processing_std_tools.errors import DocumentError, UnsupportedFormatError
from doc_processing_std_tools.workspace import Workspace

DOCUMENTS = Path(formats.__file__).parent


def declared_formats() -> list[DocumentFormat]:
    """Every `DocumentFormat` a module of the documents package holds at its top level."""
    found: list[DocumentFormat] = []
    for path in sorted(DOCUMENTS.glob("*.py")):
        module = importlib.import_module(f"doc_processing_std_tools.documents.{path.stem}")
        found.extend(v for v in vars(module).values() if isinstance(v, DocumentFormat))
    return found


def test_every_declared_format_is_in_the_table_once() -> None:
    declared = {id(form): form for form in declared_formats()}
    assert sorted(form.name for form in declared.values()) == sorted(f.name for f in FORMATS)
    assert all(id(form) in declared for form in FORMATS)
    assert len({form.name for form in FORMATS}) == len(FORMATS)
    assert set(READERS) == {form.name for form in FORMATS}


def test_no_suffix_is_claimed_twice() -> None:
    claimed = [s for form in FORMATS for s in (*form.suffixes, *form.saved_from)]
    assert len(claimed) == len(set(claimed))
    assert all(s.startswith(".") and s == s.lower() for s in claimed)


def test_the_source_module_names_no_format() -> None:
    words = {form.name for form in FORMATS} | {
        s for form in FORMATS for s in (*form.suffixes, *form.saved_from)
    }
    tree = ast.parse(Path(source.__file__).read_text(encoding="utf-8"))
    literals = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert literals & words == set()


def _refuse_odd(source: object, head: bytes, max_unpacked_mb: float) -> None:
    if not head.startswith(b"ODD"):
        raise DocumentError("not an odd file")


ODD = DocumentFormat(
    "odd",
    "Odd",
    (".odd",),
    TextReader(),
    content_check=_refuse_odd,
    looks_like=lambda head: head.startswith(b"ODD"),
    saved_from=(".oddold",),
)


@pytest.fixture
def folder(tmp_path: Path) -> Workspace:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "a.odd").write_bytes(b"ODD one\n")
    (root / "b.odd").write_bytes(b"even\n")
    (root / "c.unknown").write_bytes(b"ODD\x00\x01")
    (root / "d.oddold").write_bytes(b"ODD\n")
    (root / "e.bin").write_bytes(b"\x00\x01\x02")
    return Workspace(root.resolve(), 1024 * 1024, 10_000)


def test_a_new_format_is_one_declaration_and_one_line(folder: Workspace) -> None:
    table = (*FORMATS, ODD)
    with open_source(folder, "a.odd", formats=table, max_unpacked_mb=1) as opened:
        assert opened.format == "odd"
    with open_source(folder, "c.unknown", formats=table, max_unpacked_mb=1) as opened:
        assert opened.format == "odd"  # recognised by its first bytes
    with (
        pytest.raises(DocumentError, match="not an odd file"),
        open_source(folder, "b.odd", formats=table, max_unpacked_mb=1),
    ):
        pass
    with (
        pytest.raises(UnsupportedFormatError, match="save it as ODD"),
        open_source(folder, "d.oddold", formats=table, max_unpacked_mb=1),
    ):
        pass
    with (
        pytest.raises(UnsupportedFormatError, match="plain text and Odd"),
        open_source(folder, "e.bin", formats=table, max_unpacked_mb=1),
    ):
        pass
    with (
        pytest.raises(UnsupportedFormatError, match=r"Markdown and plain text\.$"),
        open_source(folder, "e.bin", formats=FORMATS, max_unpacked_mb=1),
    ):
        pass
