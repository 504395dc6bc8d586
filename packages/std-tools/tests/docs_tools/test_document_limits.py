"""Office packages that unpack to far more than they weigh, and calls the client gives up on.

Three layers are attacked here: the bound on the bytes a package may unpack to
(DPTTOOLS_DOC_MAX_UNPACKED_MB, refused before any part is parsed), the memory limit of
the process that parses documents (DPTTOOLS_DOC_MEMORY_MB, measured in a server that
itself runs under an address-space limit), and cancellation (a call the client abandons
stops using CPU).

The packages are generated here: XML of short random words, which deflate packs
five to fifty times, so they stay under the unpack ratio that flags an obvious ZIP bomb
and only the new bounds can stop them.
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import anyio
import docx
import openpyxl
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent
from process_tree import tree_cpu_seconds

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.documents.server import docs_server
from doc_processing_std_tools.errors import ConfigError, DocumentError
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import write_report_pdf

_MIB = 1024 * 1024
_WORD_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_SHARED_STRINGS_TYPE = (
    b"application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
)


def _words_block(template: bytes) -> bytes:
    """About 36 KB of `template` filled with 1,000 random eight-letter words."""
    words = os.urandom(4000).hex().encode()
    return b"".join(template % words[i : i + 8] for i in range(0, 8000, 8))


def write_heavy_docx(path: Path, xml_mib: int) -> None:
    """A real DOCX whose body is `xml_mib` MiB of one-word paragraphs."""
    base = io.BytesIO()
    docx.Document().save(base)
    with (
        zipfile.ZipFile(base) as source,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as package,
    ):
        for item in source.infolist():
            if item.filename != "word/document.xml":
                package.writestr(item, source.read(item.filename))
        with package.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(f'<w:document xmlns:w="{_WORD_NS}"><w:body>'.encode())
            block = _words_block(b"<w:p><w:r><w:t>%s</w:t></w:r></w:p>")
            for _ in range(xml_mib * _MIB // len(block) + 1):
                member.write(block)
            member.write(b"</w:body></w:document>")


def write_heavy_xlsx(path: Path, strings_mib: int) -> None:
    """A real XLSX with `strings_mib` MiB of shared strings (openpyxl holds them all)."""
    base = io.BytesIO()
    book = openpyxl.Workbook()
    book.active.append(["name", "value"])
    book.save(base)
    with (
        zipfile.ZipFile(base) as source,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as package,
    ):
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "[Content_Types].xml":
                data = data.replace(
                    b"</Types>",
                    b'<Override PartName="/xl/sharedStrings.xml" ContentType="'
                    + _SHARED_STRINGS_TYPE
                    + b'"/></Types>',
                )
            package.writestr(item, data)
        with package.open("xl/sharedStrings.xml", "w", force_zip64=True) as member:
            member.write(b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">')
            block = _words_block(b"<si><t>%s</t></si>")
            for _ in range(strings_mib * _MIB // len(block) + 1):
                member.write(block)
            member.write(b"</sst>")


def write_inflating_pdf(path: Path, content_mib: int) -> None:
    """A one-page PDF whose content stream inflates to `content_mib` MiB of line drawing
    commands (about 200 times its size: a PDF reader holds the whole stream at once)."""
    packer = zlib.compressobj(1)
    drawing = b"0 0 m 1 1 l S\n" * (_MIB // 14)
    data = b"".join(packer.compress(drawing) for _ in range(content_mib)) + packer.flush()
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R>>",
        b"<</Length %d/Filter/FlateDecode>>stream\n%b\nendstream" % (len(data), data),
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj%bendobj\n" % (number, body)
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(pdf))


def unpacked_size(path: Path) -> int:
    with zipfile.ZipFile(path) as package:
        return sum(item.file_size for item in package.infolist())


def use(folder: Path, **values: str) -> None:
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(folder),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "100",
                **{f"DPTTOOLS_{name.upper()}": value for name, value in values.items()},
            }
        )
    )


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    yield workspace.resolve()
    reset_settings()


WRITERS = {"heavy.docx": write_heavy_docx, "heavy.xlsx": write_heavy_xlsx}
TOOLS = {
    "get_file_overview": {},
    "read_document": {},
    "search_document": {"query": "zzzz"},
    "extract_tables": {},
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_package_that_unpacks_past_the_bound_is_refused_at_once(folder: Path, name: str) -> None:
    WRITERS[name](folder / name, 40)
    packed, unpacked = (folder / name).stat().st_size, unpacked_size(folder / name)
    assert unpacked > 40 * _MIB and unpacked < packed * 100  # not an obvious ZIP bomb
    use(folder, doc_max_unpacked_mb="16")
    ws = Workspace.from_settings(get_settings())
    for tool, arguments in TOOLS.items():
        start = time.perf_counter()
        with pytest.raises(DocumentError) as refused:
            getattr(api, tool)(ws, name, **arguments)
        assert time.perf_counter() - start < 1.0, tool
        assert str(refused.value) == (
            f"{name!r} would unpack to {unpacked:,} bytes, over the limit of 16 MB "
            "(DPTTOOLS_DOC_MAX_UNPACKED_MB=16); raise DPTTOOLS_DOC_MAX_UNPACKED_MB to read it."
        )


def test_the_settings_passed_to_a_call_are_the_ones_it_uses(folder: Path) -> None:
    """A call (as a document worker makes it) takes its settings as an argument: the
    readers read no settings of their own, so the process's settings neither apply nor
    change."""
    write_heavy_xlsx(folder / "heavy.xlsx", 24)
    use(folder, doc_max_unpacked_mb="1000")
    strict = load_settings(
        {"DPTTOOLS_WORKSPACE_DIR": str(folder), "DPTTOOLS_DOC_MAX_UNPACKED_MB": "8"}
    )
    ws = Workspace.from_settings(strict)
    with pytest.raises(DocumentError, match="DPTTOOLS_DOC_MAX_UNPACKED_MB=8"):
        api.get_file_overview(ws, "heavy.xlsx", settings=strict)
    assert get_settings().doc_max_unpacked_mb == 1000
    overview = api.get_file_overview(Workspace.from_settings(get_settings()), "heavy.xlsx")
    assert json.loads(overview)["format"] == "xlsx"


@pytest.mark.anyio
async def test_the_unpack_bound_reaches_the_client_with_its_message(folder: Path) -> None:
    write_heavy_xlsx(folder / "heavy.xlsx", 24)
    use(folder, doc_max_unpacked_mb="8")
    async with Client(docs_server) as client:
        result = await client.call_tool("read_document", {"path": "heavy.xlsx"})
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "over the limit of 8 MB (DPTTOOLS_DOC_MAX_UNPACKED_MB=8)" in block.text


# The server runs under this address-space limit; a document that needs more must get a
# clear error, and the server must answer the next call.
SERVER_MEMORY = 1536 * _MIB
_LIMITED_SERVER = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
runpy.run_module("doc_processing_std_tools", run_name="__main__", alter_sys=True)
"""


@pytest.mark.anyio
async def test_a_document_that_needs_more_memory_than_allowed_gets_a_clear_error(
    folder: Path,
) -> None:
    # 100 MiB of paragraphs take about 1.4 GB to parse: past the server's own limit.
    write_heavy_docx(folder / "heavy.docx", 100)
    write_report_pdf(folder / "report.pdf")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", _LIMITED_SERVER.format(limit=SERVER_MEMORY), "--workspace", str(folder)],
        env={
            "DPTTOOLS_MAX_FILE_SIZE_MB": "100",
            "DPTTOOLS_DOC_MAX_UNPACKED_MB": "100000",
            "DPTTOOLS_DOC_MEMORY_MB": "512",
        },
    )
    async with Client(params) as client:
        start = time.perf_counter()
        result = await client.call_tool("read_document", {"path": "heavy.docx"})
        elapsed = time.perf_counter() - start
        block = result.content[0]
        assert isinstance(block, TextContent)
        assert result.is_error, block.text[:200]
        assert "'heavy.docx' needs more memory than the document tools may use" in block.text
        assert "DPTTOOLS_DOC_MEMORY_MB=512" in block.text
        assert elapsed < 30
        after = await client.call_tool("get_file_overview", {"path": "report.pdf"})
        assert not after.is_error
        overview = after.content[0]
        assert isinstance(overview, TextContent)
        assert json.loads(overview.text)["page_count"] == 3


@pytest.mark.anyio
async def test_a_pdf_page_that_inflates_past_the_memory_limit_costs_one_call(
    folder: Path,
) -> None:
    # PDFium aborts its process when an allocation fails: in the server's process that
    # would end the server.
    write_inflating_pdf(folder / "inflating.pdf", 400)
    write_report_pdf(folder / "report.pdf")
    assert (folder / "inflating.pdf").stat().st_size < 4 * _MIB
    use(folder, doc_memory_mb="300")
    async with Client(docs_server) as client:
        result = await client.call_tool("read_document", {"path": "inflating.pdf"})
        block = result.content[0]
        assert isinstance(block, TextContent)
        assert result.is_error, block.text[:200]
        assert "'inflating.pdf' stopped: the process that parses documents ended" in block.text
        assert "most likely out of memory (DPTTOOLS_DOC_MEMORY_MB=300)" in block.text
        after = await client.call_tool("read_document", {"path": "report.pdf", "pages": "3"})
    assert not after.is_error


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in-memory", "stdio"])
async def test_a_call_the_client_abandons_stops_using_cpu(folder: Path, route: str) -> None:
    # Reading 20 MiB of shared strings keeps a core busy for many seconds.
    write_heavy_xlsx(folder / "strings.xlsx", 20)
    write_report_pdf(folder / "report.pdf")
    use(folder)
    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(folder)],
    )
    async with Client(stdio if route == "stdio" else docs_server) as client:
        # The first call starts a worker, so that the abandoned call starts working at once.
        assert not (await client.call_tool("get_file_overview", {"path": "report.pdf"})).is_error
        with anyio.move_on_after(1.5) as scope:
            await client.call_tool("search_document", {"path": "strings.xlsx", "query": "zz"})
        assert scope.cancelled_caught
        await anyio.sleep(0.5)
        before = tree_cpu_seconds()
        await anyio.sleep(1.5)
        used = tree_cpu_seconds() - before
        # The server still answers.
        assert not (await client.call_tool("get_file_overview", {"path": "report.pdf"})).is_error
    assert used < 0.5, f"{used:.2f} CPU seconds used after the call was abandoned"


def test_the_address_space_limit_is_not_the_test_processs(folder: Path) -> None:
    # The limits above apply to child processes only; this process keeps its own.
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    assert soft == resource.RLIM_INFINITY or soft > SERVER_MEMORY


def _children(root: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == root:
                found.append(int(entry.name))
    return found


@pytest.mark.anyio
async def test_a_worker_that_dies_between_calls_is_replaced(folder: Path) -> None:
    write_report_pdf(folder / "report.pdf")
    use(folder)
    async with Client(docs_server) as client:
        first = await client.call_tool("read_document", {"path": "report.pdf", "pages": "3"})
        assert not first.is_error
        workers = _children(os.getpid())
        assert workers, "the call ran in no child process"
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        second = await client.call_tool("read_document", {"path": "report.pdf", "pages": "3"})
    assert not second.is_error
    block = second.content[0]
    assert isinstance(block, TextContent)
    assert block.text.startswith("## Page 3\n\nClosing remarks")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DPTTOOLS_DOC_MAX_UNPACKED_MB", "lots", "is not a number"),
        ("DPTTOOLS_DOC_MEMORY_MB", "1.5", "is not a whole number"),
        ("DPTTOOLS_DOC_WORKERS", "0", "must be a positive integer"),
        ("DPTTOOLS_TABLE_PAGE_SECONDS", "-1", "must be a positive, finite number"),
        ("DPTTOOLS_TABLE_CALL_SECONDS", "inf", "must be a positive, finite number"),
    ],
)
def test_bad_limit_values_are_configuration_errors(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}={value!r} {message}"):
        load_settings({name: value})


# A worker parses hostile files, so the server trusts nothing it answers: these children
# speak the worker's protocol (an 8-byte length, then JSON) as a subverted reader might.
_HOSTILE_WORKERS = {
    "announces a terabyte": "sys.stdout.buffer.write((1 << 40).to_bytes(8, 'big'))",
    "sends no JSON": "sys.stdout.buffer.write((5).to_bytes(8, 'big') + b'\\x80abcd')",
    "sends JSON of another shape": (
        "sys.stdout.buffer.write((9).to_bytes(8, 'big') + b'[1, 2, 3]')"
    ),
}


@pytest.mark.parametrize("behaviour", sorted(_HOSTILE_WORKERS))
def test_a_worker_that_answers_garbage_is_stopped_and_nothing_is_believed(
    behaviour: str,
) -> None:
    from doc_processing_std_tools.documents import worker

    code = f"import sys, time\nsys.stdin.buffer.read(8)\n{_HOSTILE_WORKERS[behaviour]}\n"
    code += "sys.stdout.buffer.flush()\ntime.sleep(60)\n"
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    hostile = worker._Worker(process)
    start = time.perf_counter()
    with pytest.raises(worker._WorkerGone) as gone:
        hostile.exchange(b"request", 1024 * 1024)
    assert time.perf_counter() - start < 5
    assert gone.value.how.startswith("stopped: its answer was")
    assert process.poll() is not None  # killed, not left waiting


def test_an_error_answer_can_name_only_our_own_errors() -> None:
    from doc_processing_std_tools.documents import worker

    for kind in ("SystemExit", "KeyboardInterrupt", "MemoryError", "ConfigError"):
        raised = worker._error({"error": {"kind": kind, "message": "m"}})
        expected = ConfigError if kind == "ConfigError" else DocumentError
        assert type(raised) is expected and str(raised) == "m"
