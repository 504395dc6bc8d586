"""HTML (with the standard library's html.parser) and Markdown, read into sections."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .flow import FlowBuilder, FlowDocument, FlowReader
from .reader import DocumentFormat
from .source import Source, decode_text

__all__ = ["HTML", "MARKDOWN", "load_html", "load_markdown"]

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe"})
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "main", "nav", "aside",
        "blockquote", "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form",
        "address", "hr", "br", "caption", "details", "summary",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_META = {"author": "author", "description": "description", "keywords": "keywords"}


def _collapse(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


class _HtmlReader(HTMLParser):
    """Walks the HTML once, feeding a `FlowBuilder`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = FlowBuilder()
        self.metadata: dict[str, str] = {}
        self.links = 0
        self._text: list[str] = []
        self._title: list[str] | None = None
        self._heading: int | None = None
        self._skip = 0
        self._list_depth = 0
        self._pre: list[str] | None = None
        self._href: str | None = None
        # One entry per open table: its rows, and the cell being filled (None between cells).
        self._tables: list[tuple[list[list[str]], list[str] | None]] = []

    def _flush(self) -> None:
        text = _collapse(self._text)
        self._text = []
        if not text:
            return
        if self._heading is not None:
            self.builder.heading(self._heading, text)
        else:
            self.builder.block(f"- {text}" if self._list_depth else text)

    def _sink(self) -> list[str]:
        if self._tables:
            cell = self._tables[-1][1]
            if cell is not None:
                return cell
        return self._text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Open a heading, list item, table part, code block or skipped element."""
        values = {k: v or "" for k, v in attrs}
        if tag in _SKIPPED:
            self._skip += 1
        elif self._skip:
            return
        elif tag == "title":
            self._title = []
        elif tag == "meta" and values.get("name", "").lower() in _META:
            if values.get("content", "").strip():
                self.metadata[_META[values["name"].lower()]] = values["content"].strip()
        elif tag == "html" and values.get("lang"):
            self.metadata["language"] = values["lang"]
        elif tag in _HEADINGS and not self._tables:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "li":
            self._flush()
            self._list_depth += 1
        elif tag == "pre" and not self._tables:
            self._flush()
            self._pre = []
        elif tag == "table":
            if not self._tables:
                self._flush()
            self._tables.append(([], None))
        elif tag == "tr" and self._tables:
            self._tables[-1][0].append([])
        elif tag in ("td", "th") and self._tables:
            rows, _ = self._tables[-1]
            if not rows:
                rows.append([])
            self._tables[-1] = (rows, [])
        elif tag == "a":
            self.links += 1
            href = values.get("href", "")
            self._href = href if href.startswith(("http://", "https://", "mailto:")) else None
            if self._href and not self._tables:
                self._sink().append("[")
        elif tag in _BLOCKS and not self._tables:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        """Close what `handle_starttag` opened, flushing the text gathered inside it."""
        if tag in _SKIPPED:
            self._skip = max(self._skip - 1, 0)
        elif self._skip:
            return
        elif tag == "title" and self._title is not None:
            title = _collapse(self._title)
            if title:
                self.metadata["title"] = title
            self._title = None
        elif tag in _HEADINGS and self._heading is not None:
            self._flush()
            self._heading = None
        elif tag == "li":
            self._flush()
            self._list_depth = max(self._list_depth - 1, 0)
        elif tag == "pre" and self._pre is not None:
            code = "".join(self._pre).strip("\n")
            self._pre = None
            if code.strip():
                self.builder.block(f"```\n{code}\n```")
        elif tag in ("td", "th") and self._tables:
            rows, cell = self._tables[-1]
            if cell is not None:
                rows[-1].append(_collapse(cell))
                self._tables[-1] = (rows, None)
        elif tag == "table" and self._tables:
            rows, _ = self._tables.pop()
            if self._tables:
                # A table inside a cell: its text joins the outer cell.
                self._sink().append(" ".join(" ".join(r) for r in rows))
            else:
                self._flush()
                self.builder.table(rows)
        elif tag == "a":
            if self._href and not self._tables:
                self._sink().append(f"]({self._href})")
            self._href = None
        elif tag in _BLOCKS and not self._tables:
            self._flush()

    def handle_data(self, data: str) -> None:
        """Route text to the title, a code block, a table cell or the running paragraph."""
        if self._skip:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._pre is not None:
            self._pre.append(data)
        else:
            self._sink().append(data)

    def finish(self) -> FlowDocument:
        """Close anything left open (unclosed tables, a trailing paragraph) and build."""
        self.close()
        while self._tables:
            self.handle_endtag("table")
        self._heading = None
        self._flush()
        return self.builder.build(self.metadata, link_count=self.links)


def load_html(text: str) -> FlowDocument:
    """The page's visible text as sections: h1-h6 start sections; scripts, styles and
    other invisible parts are dropped; tables and code blocks are kept."""
    # The standard parser rescans the rest of the page for every '<' whose construct never
    # closes ('<?', '</' with no '>' after them): quadratic on a crafted page. No '<' after
    # the last '>' can close, so those are made plain text before parsing.
    last = text.rfind(">")
    if "<" in text[last + 1 :]:
        text = text[: last + 1] + text[last + 1 :].replace("<", "&lt;")
    reader = _HtmlReader()
    try:
        reader.feed(text)
        return reader.finish()
    except AssertionError as exc:
        # The standard parser asserts on some malformed declarations ('<![' + junk).
        raise ValueError(f"malformed markup ({exc})") from None


# Lines of a Markdown file can be very long, so each line test below takes time linear in
# the line's length: plain string operations, and regular expressions only on short,
# whitespace-free pieces (patterns such as `\s*\|?\s*` would backtrack quadratically).
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE_CELL = re.compile(r":?-{2,}:?")
_FRONT_KEYS = frozenset({"title", "author", "date", "description"})


def _atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading (`## Text`, optionally closed by `#`s), or None."""
    rest = line.lstrip(" ")
    if len(line) - len(rest) > 3:
        return None
    level = len(rest) - len(rest.lstrip("#"))
    body = rest[level:]
    if not 1 <= level <= 6 or (body and body[0] not in " \t"):
        return None
    body = body.strip(" \t")
    unclosed = body.rstrip("#")
    if not unclosed:
        return level, ""
    if unclosed != body and unclosed[-1] in " \t":
        body = unclosed.rstrip(" \t")
    return level, body


def _is_table_rule(line: str) -> bool:
    """Whether `line` is the rule under a pipe table's header (`|---|:--:|`)."""
    body = line.strip()
    body = body.removeprefix("|")
    body = body.removesuffix("|")
    return all(_RULE_CELL.fullmatch(cell.strip()) for cell in body.split("|"))


def _front_matter_field(line: str) -> tuple[str, str] | None:
    """(key, value) of a `title:`, `author:`, `date:` or `description:` line, or None."""
    key, colon, value = line.partition(":")
    name = key.rstrip()
    if not colon or name.lower() not in _FRONT_KEYS or name != name.lstrip():
        return None
    value = value.strip()
    return (name.lower(), value) if value else None


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body.removeprefix("|")
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _add_paragraph(builder: FlowBuilder, lines: list[str]) -> None:
    if len(lines) >= 2 and "|" in lines[0] and _is_table_rule(lines[1]):
        rows = [_cells(lines[0])]
        rest = 2
        while rest < len(lines) and "|" in lines[rest]:
            rows.append(_cells(lines[rest]))
            rest += 1
        builder.table(rows)
        if rest < len(lines):
            builder.block("\n".join(lines[rest:]))
    else:
        builder.block("\n".join(lines))


def load_markdown(text: str) -> FlowDocument:
    """Markdown split at its ATX headings (`#` to `######`), outside fenced code.

    A leading `---` front matter gives the title, author, date and description; pipe
    tables become tables.
    """
    lines = text.splitlines()
    metadata: dict[str, str] = {}
    start = 0
    if lines and lines[0].strip() == "---":
        for index in range(1, min(len(lines), 200)):
            if lines[index].strip() in ("---", "..."):
                for line in lines[1:index]:
                    field = _front_matter_field(line)
                    if field:
                        metadata[field[0]] = field[1].strip("\"'")
                start = index + 1
                break
    builder = FlowBuilder()
    paragraph: list[str] = []
    fence: str | None = None
    code: list[str] = []
    for line in lines[start:]:
        if fence is not None:
            code.append(line)
            if line.strip().startswith(fence):
                builder.block("\n".join(code))
                fence, code = None, []
            continue
        opening = _FENCE.match(line)
        heading = _atx_heading(line)
        if opening or heading or not line.strip():
            _add_paragraph(builder, paragraph)
            paragraph = []
        if opening:
            fence, code = opening.group(1), [line]
        elif heading:
            level, title = heading
            builder.heading(level, title)
            if "title" not in metadata and level == 1 and title:
                metadata["title"] = title
        elif line.strip():
            paragraph.append(line)
    _add_paragraph(builder, paragraph)
    if code:
        builder.block("\n".join(code))
    return builder.build(metadata, line_count=len(lines))


def _html(source: Source) -> tuple[FlowDocument, str | None]:
    text, encoding = decode_text(source)
    return load_html(text), encoding


def _markdown(source: Source) -> tuple[FlowDocument, str | None]:
    text, encoding = decode_text(source)
    return load_markdown(text), encoding


def _looks_like_html(head: bytes) -> bool:
    return b"\x00" not in head and head[:512].lstrip().lower().startswith(
        (b"<!doctype html", b"<html")
    )


HTML = DocumentFormat(
    "html", "HTML", (".html", ".htm", ".xhtml"), FlowReader(_html), looks_like=_looks_like_html
)
"""HTML: by its suffix, or by its opening tag under an unknown name."""

MARKDOWN = DocumentFormat("markdown", "Markdown", (".md", ".markdown"), FlowReader(_markdown))
"""Markdown, read into sections."""
