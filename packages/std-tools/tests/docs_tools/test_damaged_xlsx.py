"""A damaged XLSX names the damaged part and what is wrong with it, whichever part it is:
the workbook, its relations, the shared strings, the styles or a sheet. The packages are
built and damaged by hand; the tools run in the composed server over HTTP on 127.0.0.1."""

from __future__ import annotations

import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
from http_child import Started, serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships"

PARTS: dict[str, str] = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        "</Types>"
    ),
    "_rels/.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PACKAGE_REL}">'
        f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>"
    ),
    "xl/workbook.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="{REL}">'
        '<sheets><sheet name="Sales" sheetId="1" r:id="rId1"/></sheets></workbook>'
    ),
    "xl/_rels/workbook.xml.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PACKAGE_REL}">'
        f'<Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/>'
        f'<Relationship Id="rId2" Type="{REL}/sharedStrings" Target="sharedStrings.xml"/>'
        f'<Relationship Id="rId3" Type="{REL}/styles" Target="styles.xml"/>'
        "</Relationships>"
    ),
    "xl/sharedStrings.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{MAIN}" count="3" uniqueCount="3">'
        "<si><t>Region</t></si><si><t>Amount</t></si><si><t>North</t></si></sst>"
    ),
    "xl/styles.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="{MAIN}">'
        '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/></numFmts>'
        '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="164"/></cellXfs></styleSheet>'
    ),
    "xl/worksheets/sheet1.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}"><sheetData>'
        '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
        '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>120</v></c></row>'
        "</sheetData></worksheet>"
    ),
}

CUT = [
    "xl/workbook.xml",
    "xl/_rels/workbook.xml.rels",
    "xl/sharedStrings.xml",
    "xl/styles.xml",
    "xl/worksheets/sheet1.xml",
]
MISSING = ["xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml"]


def write_package(path: Path, *, cut: str | None = None, missing: str | None = None) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in PARTS.items():
            if name == missing:
                continue
            data = text.encode()
            package.writestr(name, data[: len(data) // 2] if name == cut else data)


def write_with_garbled_bytes(path: Path, part: str) -> None:
    """A whole package whose `part` has its compressed bytes overwritten in the middle,
    as a bad disk or a broken transfer leaves it: the ZIP directory is intact."""
    write_package(path)
    with zipfile.ZipFile(path) as package:
        info = package.getinfo(part)
    data = bytearray(path.read_bytes())
    # The local header is 30 bytes plus the name and the extra field.
    name_length = int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_length = int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_length + extra_length
    middle = start + info.compress_size // 2
    data[middle : middle + 4] = b"\xff\x00\xff\x00"
    path.write_bytes(bytes(data))


GARBLED = ["xl/styles.xml", "xl/worksheets/sheet1.xml"]


def file_name(part: str, damage: str) -> str:
    return f"{damage}-{part.replace('/', '_').strip('[]')}.xlsx"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    root = tmp_path_factory.mktemp("damaged-xlsx")
    workspace, skills = root / "workspace", root / "skills"
    workspace.mkdir()
    skills.mkdir()
    write_package(workspace / "whole.xlsx")
    for part in CUT:
        write_package(workspace / file_name(part, "cut"), cut=part)
    for part in MISSING:
        write_package(workspace / file_name(part, "missing"), missing=part)
    for part in GARBLED:
        write_with_garbled_bytes(workspace / file_name(part, "garbled"), part)
    with serving("--workspace", str(workspace), "--skills-dir", str(skills)) as started:
        yield started


@pytest.fixture
async def client(server: Started) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(server.url, http_client=http)) as session,
    ):
        yield session


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_the_undamaged_package_reads(client: Client) -> None:
    read = await client.call_tool("read_document", {"path": "whole.xlsx"})
    assert not read.is_error, text_of(read)
    assert "Region" in text_of(read) and "North" in text_of(read) and "120" in text_of(read)


@pytest.mark.parametrize("part", CUT)
async def test_a_cut_part_is_named_with_what_is_wrong(client: Client, part: str) -> None:
    name = file_name(part, "cut")
    read = await client.call_tool("read_document", {"path": name})
    message = text_of(read)
    assert read.is_error
    assert f"{name!r} could not be read as XLSX" in message
    assert f"its part {part} is not well-formed XML" in message
    assert "line 1, column" in message, message
    assert "save it again" in message


@pytest.mark.parametrize("part", MISSING)
async def test_a_missing_part_is_named(client: Client, part: str) -> None:
    name = file_name(part, "missing")
    read = await client.call_tool("read_document", {"path": name})
    message = text_of(read)
    assert read.is_error
    assert f"{name!r} could not be read as XLSX" in message
    assert f"its part {part} is missing" in message, message


@pytest.mark.parametrize("part", GARBLED)
async def test_a_part_that_cannot_be_unpacked_is_named(client: Client, part: str) -> None:
    name = file_name(part, "garbled")
    read = await client.call_tool("read_document", {"path": name})
    message = text_of(read)
    assert read.is_error
    assert f"{name!r} could not be read as XLSX" in message
    assert f"its part {part} cannot be unpacked (" in message, message
