"""A skill's binary files (issue 20, item 4): images (PNG, JPEG, GIF, WebP, up to 5 MiB)
come back from load_skill_resource as MCP image content; other binary files are marked
in load_skill's list, and their refusal says what the model can do instead. Driven over
stdio against the composed server, with files written here."""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ImageContent, TextContent

pytestmark = pytest.mark.anyio


def _png() -> bytes:
    """A real 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


IMAGES = {
    "assets/logo.png": (_png(), "image/png"),
    "assets/photo.jpg": (
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(64) + b"\xff\xd9",
        "image/jpeg",
    ),
    "assets/anim.gif": (b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/gif"),
    "assets/pic.webp": (b"RIFF" + struct.pack("<I", 22) + b"WEBPVP8L" + bytes(14), "image/webp"),
}
BINARY = "assets/model.bin"
LARGE_IMAGE = "assets/huge.png"
TEXT = "references/notes.md"


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    skill = root / "brand-kit"
    (skill / "assets").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: brand-kit\ndescription: Logos and colours of the brand.\n---\n\n# Use\n",
        encoding="utf-8",
    )
    for relative, (data, _) in IMAGES.items():
        (skill / relative).write_bytes(data)
    (skill / BINARY).write_bytes(b"\x00\x01\x02weights\x00" * 100)
    (skill / LARGE_IMAGE).write_bytes(_png() + bytes(5 * 1024 * 1024))
    (skill / TEXT).write_text("# Notes\n\nBlue is #0050ff.\n", encoding="utf-8")
    return root.resolve()


def _params(skills: Path, workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(workspace)],
        env={"DPTTOOLS_SKILLS_DIR": str(skills)},
    )


def _only_text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_load_skill_marks_images_and_binary_files(skills: Path, tmp_path: Path) -> None:
    async with Client(_params(skills, tmp_path)) as client:
        text = _only_text(await client.call_tool("load_skill", {"skill_name": "brand-kit"}))
    for relative in IMAGES:
        assert f'<file kind="image">{relative}</file>' in text
    assert f'<file kind="binary">{BINARY}</file>' in text
    # Over the image cap: not shown as an image, so marked binary.
    assert f'<file kind="binary">{LARGE_IMAGE}</file>' in text
    assert f"<file>{TEXT}</file>" in text
    assert 'kind="image" as an image' in text
    assert "execute_skill_script" in text


async def test_images_come_back_as_image_content(skills: Path, tmp_path: Path) -> None:
    async with Client(_params(skills, tmp_path)) as client:
        for relative, (data, mime_type) in IMAGES.items():
            result = await client.call_tool(
                "load_skill_resource", {"skill_name": "brand-kit", "resource_path": relative}
            )
            assert not result.is_error, result.content
            images = [block for block in result.content if isinstance(block, ImageContent)]
            assert len(images) == 1
            assert images[0].mime_type == mime_type
            assert base64.b64decode(images[0].data) == data
            labels = [block.text for block in result.content if isinstance(block, TextContent)]
            assert labels and relative in labels[0]


async def test_other_binary_files_are_refused_with_what_to_do_instead(
    skills: Path, tmp_path: Path
) -> None:
    async with Client(_params(skills, tmp_path)) as client:
        binary = await client.call_tool(
            "load_skill_resource", {"skill_name": "brand-kit", "resource_path": BINARY}
        )
        large = await client.call_tool(
            "load_skill_resource", {"skill_name": "brand-kit", "resource_path": LARGE_IMAGE}
        )
        text = await client.call_tool(
            "load_skill_resource", {"skill_name": "brand-kit", "resource_path": TEXT}
        )
    message = _only_text(binary)
    assert binary.is_error
    assert "a tool made for its format" not in message
    assert "PNG, JPEG, GIF and WebP" in message
    assert "execute_skill_script" in message
    assert str(skills / "brand-kit" / BINARY) in message
    assert large.is_error
    assert "images are shown up to 5.0 MB" in _only_text(large)
    assert not text.is_error
    assert "Blue is #0050ff." in _only_text(text)
