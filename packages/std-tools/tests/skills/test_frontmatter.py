"""SKILL.md parsing and the Agent Skills field rules, without any file or server."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest
import yaml

from doc_processing_std_tools.skills.core.frontmatter import (
    MAX_FRONTMATTER_CHARS,
    ParsedSkillMd,
    check_fields,
    decode_skill_md,
    is_valid_name,
    parse_skill_md,
    read_skill_md_text,
)
from doc_processing_std_tools.skills.core.safe_yaml import (
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    Loaded,
    Refused,
    load_yaml,
)


def codes(parsed: ParsedSkillMd) -> list[str]:
    return [d.code for d in parsed.diagnostics]


def field_codes(fields: dict[str, Any], folder: str = "my-skill") -> list[str]:
    return [d.code for d in check_fields(fields, folder)[1]]


def test_a_valid_skill_md_gives_its_fields_and_body() -> None:
    parsed = parse_skill_md("---\nname: my-skill\ndescription: Does things.\n---\n# Title\n")
    assert parsed.fields == {"name": "my-skill", "description": "Does things."}
    assert parsed.body == "# Title\n"
    assert parsed.diagnostics == ()


def test_a_byte_order_mark_and_crlf_line_endings_load_normally() -> None:
    data = "\ufeff---\r\nname: my-skill\r\ndescription: Does things.\r\n---\r\nBody\r\n"
    parsed = read_skill_md_text(data.encode("utf-8"))
    assert parsed.fields == {"name": "my-skill", "description": "Does things."}
    assert parsed.body == "Body\n"
    assert parsed.diagnostics == ()


def test_old_mac_line_endings_load_normally() -> None:
    parsed = parse_skill_md("---\rname: my-skill\rdescription: Does things.\r---\rBody")
    assert parsed.fields == {"name": "my-skill", "description": "Does things."}


def test_bytes_that_are_not_utf8_are_an_error() -> None:
    parsed = read_skill_md_text("---\ndescription: caf\xe9\n---\n".encode("latin-1"))
    assert parsed.fields is None
    assert codes(parsed) == ["not_utf8"]
    assert parsed.diagnostics[0].level == "error"
    assert "UTF-8" in parsed.diagnostics[0].message
    assert isinstance(decode_skill_md(b"ok"), str)


@pytest.mark.parametrize(
    "text",
    ["# Just markdown\n", "", "name: x\ndescription: y\n", "--- \nname: x\n", "---\nname: x\n"],
)
def test_missing_or_unclosed_frontmatter_is_an_error(text: str) -> None:
    parsed = parse_skill_md(text)
    assert parsed.fields is None
    assert codes(parsed) == ["missing_frontmatter"]
    assert parsed.diagnostics[0].level == "error"
    assert "---" in parsed.diagnostics[0].message


def test_yaml_that_cannot_be_parsed_is_an_error_naming_the_line() -> None:
    parsed = parse_skill_md("---\nname: x\ndescription: [unclosed\n---\n")
    assert parsed.fields is None
    assert codes(parsed) == ["invalid_yaml"]
    assert "line" in parsed.diagnostics[0].message


def test_frontmatter_that_is_not_a_mapping_is_an_error() -> None:
    parsed = parse_skill_md("---\n- a\n- b\n---\n")
    assert codes(parsed) == ["frontmatter_not_mapping"]
    assert parsed.fields is None


def test_an_empty_frontmatter_parses_to_no_fields() -> None:
    parsed = parse_skill_md("---\n---\nbody")
    assert parsed.fields == {}
    assert field_codes({}) == ["missing_description"]


def test_an_unquoted_colon_in_the_description_is_quoted_with_a_warning() -> None:
    parsed = parse_skill_md(
        "---\nname: my-skill\ndescription: Use when: the user asks\nlicense: MIT\n---\n"
    )
    assert parsed.fields == {
        "name": "my-skill",
        "description": "Use when: the user asks",
        "license": "MIT",
    }
    assert codes(parsed) == ["unquoted_colon"]
    assert parsed.diagnostics[0].level == "warning"
    assert "'description'" in parsed.diagnostics[0].message


def test_the_colon_repair_folds_continuation_lines_and_keeps_apostrophes() -> None:
    parsed = parse_skill_md(
        "---\nname: my-skill\ndescription: Reads invoices: totals, dates\n"
        "  and the supplier's VAT id\n---\n"
    )
    assert parsed.fields is not None
    assert parsed.fields["description"] == (
        "Reads invoices: totals, dates and the supplier's VAT id"
    )
    assert codes(parsed) == ["unquoted_colon"]


def test_the_colon_repair_takes_linear_time_on_a_line_full_of_blanks() -> None:
    # A lazy pattern followed by optional blanks once made this quadratic: about 20 s.
    blanks = " \t" * (MAX_FRONTMATTER_CHARS // 2 - 40)
    started = time.perf_counter()
    parsed = parse_skill_md(f"---\ndescription: Use when: asked{blanks}x\n---\n")
    assert time.perf_counter() - started < 1.0
    assert parsed.fields is not None
    assert parsed.fields["description"].startswith("Use when: asked")
    assert codes(parsed) == ["unquoted_colon"]


def test_valid_yaml_with_colons_is_not_reported() -> None:
    parsed = parse_skill_md('---\nname: my-skill\ndescription: "Use when: asked"\n---\n')
    assert parsed.fields is not None and parsed.fields["description"] == "Use when: asked"
    assert parsed.diagnostics == ()


def test_a_colon_repair_that_does_not_help_reports_the_original_yaml_error() -> None:
    parsed = parse_skill_md("---\ndescription: a: b\nmetadata: [x\n---\n")
    assert codes(parsed) == ["invalid_yaml"]


def test_dates_stay_text() -> None:
    parsed = parse_skill_md("---\ndescription: d\nmetadata:\n  updated: 2025-01-31\n---\n")
    assert parsed.fields is not None
    assert parsed.fields["metadata"] == {"updated": "2025-01-31"}


def test_python_object_tags_are_refused() -> None:
    parsed = parse_skill_md("---\ndescription: !!python/object/apply:os.system ['true']\n---\n")
    assert codes(parsed) == ["invalid_yaml"]


def test_an_integer_too_long_to_convert_is_an_error_not_a_crash() -> None:
    parsed = parse_skill_md("---\ndescription: " + "9" * 20_000 + "\n---\n")
    assert codes(parsed) == ["invalid_yaml"]


@pytest.mark.parametrize("value", ["!!bool maybe", "!!int ''", "!!timestamp soon"])
def test_a_value_its_explicit_tag_cannot_read_is_an_error_not_a_crash(value: str) -> None:
    parsed = parse_skill_md(f"---\nname: x\ndescription: {value}\n---\n")
    assert codes(parsed) == ["invalid_yaml"]
    assert "the type its tag names" in parsed.diagnostics[0].message


@pytest.mark.parametrize(
    "frontmatter",
    [
        "name: x\ndescription: Does things, then more.\nlicense: MIT\n",
        "description: d\nmetadata:\n  version: '1.0'\n  count: 3\n  ratio: 1.5\n  on: yes\n",
        "description: d\nmetadata:\n\n    a: ~\n    b: null\n    c:\nnext: 0x1F\n",
        "description: 'it''s quoted'  \nother: \"double\"\nurl: http://x.y/z\nc: C#\n",
        "description: d\nempty:\nyes: no\nnull: 017\nn: -1\nf: .inf\nk: 1_000\n",
        "description: d\nmetadata:\n  a: b\n c: d\n",
        "description: d\nmetadata:\n  a: b\n    c: d\n",
        "description: a: b\n",
        "description: d\n  continued\n",
        "description: d # a comment\n",
        "description: d\nmerge: =\n",
        "description: caf\u00e9 \u2014 done\nk: \u00a0x\u00a0\n",
        "description: d\u2028e\n",
    ],
)
def test_plain_frontmatter_reads_as_pyyaml_reads_it(frontmatter: str) -> None:
    try:
        expected: Any = yaml.load(frontmatter, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        assert isinstance(load_yaml(frontmatter), Refused)
        return
    loaded = load_yaml(frontmatter)
    assert isinstance(loaded, Loaded)
    assert loaded.value == expected
    assert [type(v) for v in loaded.value.values()] == [type(v) for v in expected.values()]


# ---- Documents built to blow up: each is an error within bounded time and memory.


def assert_refused_quickly(text: str, code: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        parsed = parse_skill_md(text)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parsed.fields is None
    assert codes(parsed) == [code]
    assert parsed.diagnostics[0].level == "error"
    assert elapsed < 2.0
    assert peak < 64 * 1024 * 1024


def test_deep_flow_nesting_is_refused() -> None:
    depth = MAX_YAML_DEPTH + 5
    assert_refused_quickly(
        f"---\ndescription: {'[' * depth}x{']' * depth}\n---\n", "yaml_too_complex"
    )


def test_very_deep_flow_nesting_is_refused() -> None:
    depth = 30_000
    assert_refused_quickly(f"---\nx: {'[' * depth}{']' * depth}\n---\n", "yaml_too_complex")


def test_deep_block_nesting_is_refused() -> None:
    lines = "".join(f"{' ' * i}k{i}:\n" for i in range(60))
    assert_refused_quickly(f"---\n{lines}---\n", "yaml_too_complex")


def test_many_plain_lines_over_the_node_bound_are_refused() -> None:
    lines = "".join(f"k{i}: v\n" for i in range(MAX_YAML_NODES // 2 + 1))
    assert_refused_quickly(f"---\ndescription: d\n{lines}---\n", "yaml_too_complex")


def test_nesting_at_the_limit_is_accepted() -> None:
    depth = MAX_YAML_DEPTH - 1
    parsed = parse_skill_md(f"---\ndescription: d\nx: {'[' * depth}1{']' * depth}\n---\n")
    assert parsed.fields is not None


def test_a_billion_laughs_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    assert_refused_quickly("---\n" + "\n".join(lines) + "\n---\n", "yaml_too_complex")


def test_aliases_count_the_depth_of_what_they_name() -> None:
    half = MAX_YAML_DEPTH // 2 + 2
    deep = "[" * half + "x" + "]" * half
    text = f"---\na: &d {deep}\nb: {'[' * half}*d{']' * half}\n---\n"
    assert_refused_quickly(text, "yaml_too_complex")


def test_a_few_harmless_aliases_are_fine() -> None:
    parsed = parse_skill_md("---\ndescription: &d Same text\nmetadata:\n  copy: *d\n---\n")
    assert parsed.fields is not None
    assert parsed.fields["metadata"] == {"copy": "Same text"}


@pytest.mark.parametrize(
    "frontmatter",
    [
        "description: d\nmetadata: &m {k: *m}\n",
        "name: &n [*n]\ndescription: d\n",
        "description: &d [*d]\n",
        "description: d\nmetadata: &a\n  b:\n    c: [*a]\n",
        "&r {description: d, self: *r}\n",
        "description: d\nmetadata: &m {<<: *m}\n",
    ],
)
def test_an_alias_inside_what_it_names_is_one_error_not_a_crash(frontmatter: str) -> None:
    assert_refused_quickly(f"---\n{frontmatter}---\nbody\n", "yaml_recursive_alias")
    message = parse_skill_md(f"---\n{frontmatter}---\n").diagnostics[0].message
    assert "refers to itself" in message
    assert "remove the alias" in message


def test_an_alias_to_a_finished_sibling_is_not_recursive() -> None:
    parsed = parse_skill_md("---\ndescription: d\nmetadata: {a: &x [1], b: *x}\n---\n")
    assert parsed.diagnostics == ()
    assert parsed.fields is not None
    assert parsed.fields["metadata"] == {"a": [1], "b": [1]}


def test_a_huge_scalar_is_refused_by_the_size_bound() -> None:
    huge = "x" * (10 * 1024 * 1024)
    assert_refused_quickly(f"---\ndescription: {huge}\n---\n", "frontmatter_too_large")


def test_frontmatter_just_over_the_bound_is_refused_even_when_closed() -> None:
    padding = "#" + "p" * (MAX_FRONTMATTER_CHARS + 10) + "\n"
    assert_refused_quickly(f"---\ndescription: d\n{padding}---\n", "frontmatter_too_large")


# ---- Field rules.


def test_a_missing_description_skips_the_skill() -> None:
    fields, diagnostics = check_fields({"name": "my-skill"}, "my-skill")
    assert fields is None
    assert [(d.level, d.code) for d in diagnostics] == [("error", "missing_description")]
    assert "non-empty 'description'" in diagnostics[0].message


@pytest.mark.parametrize("description", ["", "   ", None, ["a"], {"a": 1}, True])
def test_an_empty_or_unusable_description_skips_the_skill(description: object) -> None:
    fields, diagnostics = check_fields({"name": "s", "description": description}, "s")
    assert fields is None
    assert [d.code for d in diagnostics] == ["missing_description"]


def test_a_missing_name_uses_the_folder_name_with_a_warning() -> None:
    fields, diagnostics = check_fields({"description": "d"}, "my-skill")
    assert fields is not None and fields.name == "my-skill"
    assert [(d.level, d.code) for d in diagnostics] == [("warning", "missing_name")]


def test_a_name_that_differs_from_the_folder_is_loaded_under_the_folder_name() -> None:
    fields, diagnostics = check_fields({"name": "other", "description": "d"}, "my-skill")
    assert fields is not None and fields.name == "my-skill"
    assert [(d.level, d.code) for d in diagnostics] == [("warning", "name_mismatch")]


@pytest.mark.parametrize(
    "name", ["My-Skill", "my_skill", "-skill", "skill-", "my--skill", "sk ill"]
)
def test_a_name_that_breaks_the_pattern_is_loaded_with_a_warning(name: str) -> None:
    fields, diagnostics = check_fields({"name": name, "description": "d"}, "good-folder")
    assert fields is not None and fields.name == "good-folder"
    # One warning: the name breaks the rule; it is not reported again as a mismatch, but
    # the warning says what the skill is listed as.
    assert [d.code for d in diagnostics] == ["invalid_name"]
    assert all(d.level == "warning" for d in diagnostics)
    assert "listed as 'good-folder'" in diagnostics[0].message


def test_a_name_over_64_characters_is_loaded_with_a_warning() -> None:
    fields, diagnostics = check_fields({"name": "a" * 65, "description": "d"}, "a")
    assert fields is not None
    assert [d.code for d in diagnostics] == ["name_too_long"]


@pytest.mark.parametrize(
    ("folder", "suggested"),
    [
        ("Bad Folder", "bad-folder"),
        ("my_skill", "my-skill"),
        ("PDFTools", "pdftools"),
        ("a" * 65, "a" * 64),
    ],
)
def test_a_folder_name_that_breaks_the_rule_is_loaded_with_a_warning_that_says_rename(
    folder: str, suggested: str
) -> None:
    fields, diagnostics = check_fields({"name": folder, "description": "d"}, folder)
    assert fields is not None and fields.name == folder
    assert [(d.level, d.code) for d in diagnostics] == [("warning", "invalid_folder_name")]
    assert "tool calls" in diagnostics[0].message
    assert "cannot reach it by this name" in diagnostics[0].message
    assert f"rename the folder (for example to '{suggested}'" in diagnostics[0].message


def test_a_description_over_1024_characters_is_loaded_in_full_with_a_warning() -> None:
    fields, diagnostics = check_fields({"name": "s", "description": "d" * 1025}, "s")
    assert fields is not None and len(fields.description) == 1025
    assert [(d.level, d.code) for d in diagnostics] == [("warning", "description_too_long")]
    assert field_codes({"name": "s", "description": "d" * 1024}, "s") == []


def test_compatibility_over_500_characters_is_loaded_with_a_warning() -> None:
    fields, diagnostics = check_fields(
        {"name": "s", "description": "d", "compatibility": "c" * 501}, "s"
    )
    assert fields is not None and fields.compatibility == "c" * 501
    assert [d.code for d in diagnostics] == ["compatibility_too_long"]
    assert field_codes({"name": "s", "description": "d", "compatibility": "c" * 500}, "s") == []


@pytest.mark.parametrize("metadata", ["a string", ["a", "b"], 42])
def test_metadata_that_is_not_a_mapping_is_dropped_with_a_warning(metadata: object) -> None:
    fields, diagnostics = check_fields({"name": "s", "description": "d", "metadata": metadata}, "s")
    assert fields is not None and fields.metadata is None
    assert [(d.level, d.code) for d in diagnostics] == [("warning", "invalid_metadata")]


def test_metadata_values_are_turned_into_strings() -> None:
    fields, _ = check_fields(
        {
            "name": "s",
            "description": "d",
            "metadata": {
                "owner": "finance",
                "version": 2,
                "ratio": 1.5,
                "stable": True,
                "empty": None,
                "tags": ["a", "b"],
                "nested": {"k": "v"},
                7: "seven",
            },
        },
        "s",
    )
    assert fields is not None
    assert fields.metadata == {
        "owner": "finance",
        "version": "2",
        "ratio": "1.5",
        "stable": "true",
        "empty": "",
        "tags": '["a", "b"]',
        "nested": '{"k": "v"}',
        "7": "seven",
    }


def test_license_and_compatibility_are_kept_and_other_fields_are_not_surfaced() -> None:
    fields, diagnostics = check_fields(
        {
            "name": "s",
            "description": " d ",
            "license": "MIT",
            "compatibility": "Needs the docs extra.",
            "allowed-tools": ["Bash", "Read"],
        },
        "s",
    )
    assert fields is not None
    assert (fields.description, fields.license, fields.compatibility) == (
        "d",
        "MIT",
        "Needs the docs extra.",
    )
    assert not hasattr(fields, "allowed_tools")
    assert diagnostics == []


def test_a_license_that_is_not_text_is_ignored_with_a_warning() -> None:
    fields, diagnostics = check_fields({"name": "s", "description": "d", "license": ["MIT"]}, "s")
    assert fields is not None and fields.license is None
    assert [d.code for d in diagnostics] == ["invalid_license"]


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("invoice-extraction", True),
        ("v2-tools-3", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("A", False),
        ("-a", False),
        ("a-", False),
        ("a--b", False),
        ("a_b", False),
        ("../a", False),
        ("é", False),
    ],
)
def test_the_skill_name_rule(name: str, valid: bool) -> None:
    assert is_valid_name(name) is valid
