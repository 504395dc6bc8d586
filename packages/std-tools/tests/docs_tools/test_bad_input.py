"""Bad input: each a clear error, no crash, and nothing written in the workspace."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import (
    DocumentError,
    EncryptedDocumentError,
    FileTooLargeError,
    InvalidArgumentError,
    MissingExtraError,
    NotFoundError,
    PathOutsideRootError,
    StdToolsError,
    UnsupportedFormatError,
)
from doc_processing_std_tools.filesystem.operations import Workspace, read_file

TOOLS: dict[str, Callable[[Workspace, str], str]] = {
    "get_file_overview": api.get_file_overview,
    "read_document": api.read_document,
    "extract_tables": api.extract_tables,
    "search_document": lambda ws, path: api.search_document(ws, path, "invoice"),
}

BAD_FILES = [
    ("corrupt.pdf", DocumentError, "damaged or incomplete"),
    ("renamed.pdf", DocumentError, "lacks the PDF header"),
    ("encrypted.pdf", EncryptedDocumentError, "password-protected"),
    ("empty.pdf", DocumentError, "is empty"),
    ("nopages.pdf", DocumentError, "without any page"),
    ("empty.csv", DocumentError, "is empty"),
    ("big.pdf", FileTooLargeError, "DPTTOOLS_MAX_FILE_SIZE_MB"),
    ("broken.docx", DocumentError, "could not be read as DOCX"),
    ("broken.xlsx", DocumentError, "not a valid XLSX"),
    ("cut.docx", DocumentError, "could not be read as DOCX"),
    ("cut.xlsx", DocumentError, "could not be read as XLSX: the file looks damaged"),
    ("legacy.doc", UnsupportedFormatError, "save it as DOCX"),
    ("missing.pdf", NotFoundError, "There is no file 'missing.pdf'"),
    ("../outside.pdf", PathOutsideRootError, "'..'"),
    ("/etc/passwd", PathOutsideRootError, "is outside the workspace"),
]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.parent.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def unchanged(library: Path) -> Iterator[None]:
    """Asserts that the test wrote, changed and removed nothing around the samples."""
    before = snapshot(library)
    yield
    assert snapshot(library) == before


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize(("name", "error", "message"), BAD_FILES)
def test_bad_files_give_clear_errors(
    ws: Workspace, tool: str, name: str, error: type[StdToolsError], message: str
) -> None:
    with pytest.raises(error, match=message):
        TOOLS[tool](ws, name)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_symlink_out_of_the_workspace_is_refused(scratch: Path, library: Path, tool: str) -> None:
    (scratch / "report.pdf").symlink_to(library / "report.pdf")
    with pytest.raises(PathOutsideRootError, match="leads outside"):
        TOOLS[tool](Workspace.from_settings(get_settings()), "report.pdf")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_missing_files_folders_and_large_files_are_worded_as_the_file_tools_word_them(
    scratch: Path, tool: str
) -> None:
    ws = Workspace.from_settings(get_settings())
    (scratch / "reports").mkdir()
    (scratch / "huge.txt").write_bytes(b"invoice\n" * (ws.max_file_bytes // 8 + 1))
    for path, error in [
        ("gone.pdf", NotFoundError),
        ("reports", InvalidArgumentError),
        ("huge.txt", FileTooLargeError),
    ]:
        with pytest.raises(error) as from_document_tool:
            TOOLS[tool](ws, path)
        with pytest.raises(error) as from_file_tool:
            read_file(ws, path)
        assert str(from_document_tool.value) == str(from_file_tool.value)
    assert str(from_document_tool.value) == (
        "'huge.txt' is 1.0 MB (1,048,584 bytes), over the limit of 1,048,576 bytes "
        "(DPTTOOLS_MAX_FILE_SIZE_MB=1); raise DPTTOOLS_MAX_FILE_SIZE_MB to read it."
    )


def test_an_unknown_binary_format_is_named(scratch: Path) -> None:
    (scratch / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    with pytest.raises(UnsupportedFormatError, match="PDF, DOCX, XLSX, CSV, HTML"):
        api.get_file_overview(Workspace.from_settings(get_settings()), "photo.jpg")


def test_a_pdf_with_an_unknown_suffix_is_recognised(scratch: Path, library: Path) -> None:
    (scratch / "download.bin").write_bytes((library / "report.pdf").read_bytes())
    assert '"page_count": 3' in api.get_file_overview(
        Workspace.from_settings(get_settings()), "download.bin"
    )


@pytest.mark.parametrize(
    ("module", "name", "what"),
    [
        ("pypdfium2", "report.pdf", "PDF"),
        ("docx", "handbook.docx", "DOCX"),
        ("openpyxl", "book.xlsx", "XLSX"),
    ],
)
def test_without_the_docs_extra_the_error_names_the_install_command(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, module: str, name: str, what: str
) -> None:
    # A None entry in sys.modules makes `import <module>` fail as if it were not installed.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError) as caught:
        api.read_document(ws, name)
    assert str(caught.value) == (
        f'Reading {what} files needs the docs extra: pip install "doc-processing-std-tools[docs]"'
    )
    assert "Ada" in api.read_document(ws, "people.csv")


def write_zip_bomb(source: Path, target: Path) -> None:
    """Copy an Office package and add a member of 64 MiB of zeros (about 64 KB packed)."""
    with (
        zipfile.ZipFile(source) as original,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bomb,
    ):
        for item in original.infolist():
            bomb.writestr(item, original.read(item.filename))
        with bomb.open("docProps/padding.bin", "w") as member:
            block = bytes(1024 * 1024)
            for _ in range(64):
                member.write(block)


@pytest.mark.parametrize("name", ["handbook.docx", "book.xlsx"])
def test_an_office_zip_bomb_is_refused_before_it_is_unpacked(
    scratch: Path, library: Path, name: str
) -> None:
    write_zip_bomb(library / name, scratch / name)
    assert (scratch / name).stat().st_size < 1024 * 1024
    for tool in TOOLS.values():
        with pytest.raises(DocumentError, match="likely ZIP bomb"):
            tool(Workspace.from_settings(get_settings()), name)
