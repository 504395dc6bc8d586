"""The change policy: which changes to a workspace are applied, held back (and why), and
which files scripts do not see."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path, PurePosixPath

import pytest

from doc_processing_std_tools.change_policy import (
    HIDDEN_PATTERNS,
    ChangePolicy,
    announce_policy,
    normal_name,
)
from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.errors import ConfigError


def _settings(tmp_path: Path, **env: str) -> ChangePolicy:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    environ = {
        "DPTTOOLS_WORKSPACE_DIR": str(workspace),
        "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
        "DPTTOOLS_CACHE_DIR": "off",
        "HOME": str(tmp_path / "home"),
        **env,
    }
    return load_settings(environ).script_changes()


@pytest.fixture
def policy(tmp_path: Path) -> ChangePolicy:
    return _settings(tmp_path)


def _file(policy: ChangePolicy, rel: str, mode: int | None = 0o644, **kw: object) -> str | None:
    return policy.verdict(PurePosixPath(rel), kind="file", mode=mode, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "rel",
    ["report.md", "out/table.csv", "docs/chapter 1.txt", "build/out.pdf", "workspace/a.txt"],
)
def test_plain_files_with_ordinary_modes_are_applied(policy: ChangePolicy, rel: str) -> None:
    assert _file(policy, rel) is None
    assert _file(policy, rel, mode=0o600) is None
    assert _file(policy, rel, mode=None) is None  # a deletion
    assert policy.verdict(PurePosixPath(rel).parent, kind="dir", mode=0o755) is None or (
        rel.count("/") == 0
    )


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        (".git/config", "vcs"),
        ("sub/.git/hooks/post-checkout", "vcs"),
        (".GIT/config", "vcs"),
        (".gitmodules", "vcs"),
        ("vendor/.hg/hgrc", "vcs"),
        (".svn/entries", "vcs"),
        (".githooks/pre-commit", "hooks"),
        ("web/.husky/pre-push", "hooks"),
        ("AGENTS.md", "agent"),
        ("docs/CLAUDE.md", "agent"),
        ("Claude.MD", "agent"),
        ("CLAUDE.local.md", "agent"),
        (".claude/settings.json", "agent"),
        ("pkg/.claude/CLAUDE.md", "agent"),
        (".agents/notes.md", "agent"),
        (".cursor/rules/x.mdc", "agent"),
        (".cursorrules", "agent"),
        (".windsurfrules", "agent"),
        (".github/copilot-instructions.md", "agent"),
        (".mcp.json", "agent"),
        (".vscode/tasks.json", "agent"),
        ("GEMINI.md", "agent"),
        (".gemini/settings.json", "agent"),
        (".codex/config.toml", "agent"),
        (".aider.conf.yml", "agent"),
        (".continue/config.json", "agent"),
        (".clinerules", "agent"),
        ("Makefile", "build"),
        ("GNUmakefile", "build"),
        ("sub/conftest.py", "build"),
        ("setup.py", "build"),
        ("setup.cfg", "build"),
        ("pyproject.toml", "build"),
        ("package.json", "build"),
        ("tox.ini", "build"),
        ("noxfile.py", "build"),
        (".github/workflows/ci.yml", "build"),
        (".gitlab-ci.yml", "build"),
        (".pre-commit-config.yaml", "build"),
        ("lib/sitecustomize.py", "build"),
        ("usercustomize.py", "build"),
        ("site-packages/evil.pth", "build"),
        ("pkg/__pycache__/mod.cpython-312.pyc", "bytecode"),
        ("mod.pyc", "bytecode"),
        ("new-skill/SKILL.md", "skills"),
        (".env", "secret"),
        ("keys/server.pem", "secret"),
        ("../outside.txt", "outside"),
    ],
)
def test_held_back_classes(policy: ChangePolicy, rel: str, kind: str) -> None:
    for mode in (0o644, None):
        held = policy.held_back(PurePosixPath(rel), kind="file", mode=mode)
        assert held is not None, rel
        assert held.kind == kind
        assert rel in held.reason or kind == "outside"


@pytest.mark.parametrize(
    "name",
    ["CLAUDE\u200b.md", "CLAUDE.md.", "CLAUDE.md ", ".gi\u200dt", "\ufeffAGENTS.md"],
)
def test_names_a_file_system_treats_as_protected_are_held(policy: ChangePolicy, name: str) -> None:
    assert _file(policy, name) is not None
    assert _file(policy, f"{name}/x") is not None


def test_unicode_forms_compare_equal() -> None:
    assert normal_name("Cafe\u0301.md") == normal_name("CAF\u00c9.MD")


@pytest.mark.parametrize(
    ("kind", "mode", "word"),
    [
        ("file", 0o755, "executable"),
        ("file", 0o744, "executable"),
        ("file", 0o4644, "setuid"),
        ("file", 0o2644, "setuid"),
        ("file", 0o4111, "setuid"),
        ("dir", 0o2755, "setuid"),
        ("dir", 0o1777, "sticky"),
        ("dir", 0o0311 | 0o002, "world-writable"),
        ("file", 0o666, "world-writable"),
        ("link", None, "link"),
        ("special", None, "special"),
    ],
)
def test_modes_links_and_special_files_are_held(
    policy: ChangePolicy, kind: str, mode: int | None, word: str
) -> None:
    reason = policy.verdict(PurePosixPath("out/thing"), kind=kind, mode=mode)  # type: ignore[arg-type]
    assert reason is not None and word in reason


def test_ordinary_folders_are_applied(policy: ChangePolicy) -> None:
    assert policy.verdict(PurePosixPath("out"), kind="dir", mode=0o755) is None
    assert policy.verdict(PurePosixPath("out"), kind="dir", mode=0o700) is None


def test_a_folder_holding_a_skill_md_is_held(tmp_path: Path, policy: ChangePolicy) -> None:
    ws = tmp_path / "ws"
    (ws / "kit" / "pdf").mkdir(parents=True)
    (ws / "kit" / "pdf" / "SKILL.md").write_text("---\nname: pdf\n---\n")
    reason = _file(policy, "kit/pdf/scripts/run.py", workspace=ws)
    assert reason is not None and "skills" in reason
    assert _file(policy, "kit/pdf/SKILL.md", workspace=ws) is not None
    assert _file(policy, "kit/notes.md", workspace=ws) is None
    # Deleting the folder holding the skill is held too (kind dir, no mode).
    assert policy.verdict(PurePosixPath("kit/pdf"), kind="dir", mode=None, workspace=ws)


def test_configured_skills_folders_lock_and_index_are_held(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = _settings(
        tmp_path,
        DPTTOOLS_SKILLS_DIR=str(ws / "skills"),
        DPTTOOLS_SKILLS_LOCK=str(ws / "skills.lock"),
        DPTTOOLS_CACHE_DIR=str(ws / "cache"),
    )
    for rel in ("skills/new/SKILL.md", "skills/x.txt", "skills.lock", "cache/index.db"):
        assert _file(policy, rel, workspace=ws) is not None, rel
    # Removing the folder that holds the skills folder is held as well.
    assert policy.verdict(PurePosixPath("skills"), kind="dir", mode=None, workspace=ws)
    assert _file(policy, "other.txt", workspace=ws) is None


def test_a_link_among_the_parents_holds_the_change(tmp_path: Path, policy: ChangePolicy) -> None:
    ws = tmp_path / "ws"
    (tmp_path / "elsewhere").mkdir()
    (ws / "docs").symlink_to(tmp_path / "elsewhere")
    reason = _file(policy, "docs/x.txt", workspace=ws)
    assert reason is not None and "link" in reason


def test_core_hooks_path_of_the_enclosing_repository_is_held(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[core]\n\thooksPath = "ws/tooling/hooks" ; comment\n'
    )
    ws = repo / "ws"
    ws.mkdir()
    policy = _settings(tmp_path, DPTTOOLS_WORKSPACE_DIR=str(ws))
    reason = _file(policy, "tooling/hooks/pre-commit", workspace=ws)
    assert reason is not None and "hook" in reason
    assert _file(policy, "tooling/notes.txt", workspace=ws) is None
    # A change to the config is seen once the reading of it is two seconds old.
    (repo / ".git" / "config").write_text("[core]\n\thooksPath = elsewhere\n")
    time.sleep(2.1)
    assert _file(policy, "tooling/hooks/pre-commit", workspace=ws) is None


def test_core_hooks_path_of_a_worktree_link(tmp_path: Path) -> None:
    gitdir = tmp_path / "main.git"
    gitdir.mkdir()
    (gitdir / "config").write_text("[core]\n    hookspath = .hooks-here\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {gitdir}\n")
    policy = _settings(tmp_path)
    assert _file(policy, ".hooks-here/pre-commit", workspace=ws) is not None


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".env.local",
        "config/.ENV.production",
        "keys/server.pem",
        "tls/site.key",
        ".ssh/id_ed25519",
        "home/.ssh/authorized_keys",
        "id_rsa.pub",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        ".aws/credentials",
        "gcp/credentials.json",
    ],
)
def test_secrets_are_hidden(policy: ChangePolicy, rel: str) -> None:
    assert policy.hidden(PurePosixPath(rel))
    held = policy.held_back(PurePosixPath(rel), kind="file", mode=0o600)
    assert held is not None


@pytest.mark.parametrize("rel", ["notes.txt", "environment.md", "keynote/slides.txt", "envs/a"])
def test_ordinary_files_are_not_hidden(policy: ChangePolicy, rel: str) -> None:
    assert not policy.hidden(PurePosixPath(rel))


def test_the_operator_applies_more_classes_and_it_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = _settings(tmp_path, DPTTOOLS_SCRIPT_APPLY="agent, build")
    assert _file(policy, "CLAUDE.md") is None
    assert _file(policy, "Makefile") is None
    # Other reasons still hold: an executable CLAUDE.md, anything under .git.
    assert _file(policy, "CLAUDE.md", mode=0o755) is not None
    assert _file(policy, ".git/CLAUDE.md") is not None
    with caplog.at_level(logging.WARNING):
        announce_policy(policy)
    assert "DPTTOOLS_SCRIPT_APPLY" in caplog.text and "agent" in caplog.text


def test_the_default_policy_logs_nothing(
    policy: ChangePolicy, caplog: pytest.LogCaptureFixture
) -> None:
    assert policy.loosened == ()
    with caplog.at_level(logging.DEBUG):
        announce_policy(policy)
    assert caplog.text == ""


@pytest.mark.parametrize("value", ["vcs", "hooks", "link", "special", "mode", "secret", "bogus"])
def test_some_classes_are_never_applied(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="DPTTOOLS_SCRIPT_APPLY"):
        _settings(tmp_path, DPTTOOLS_SCRIPT_APPLY=value)


def test_reasons_say_how_to_allow(policy: ChangePolicy) -> None:
    reason = _file(policy, "CLAUDE.md")
    assert reason is not None
    assert "DPTTOOLS_SCRIPT_APPLY=agent" in reason
    reason = _file(policy, ".git/config")
    assert reason is not None and "DPTTOOLS_SCRIPT_APPLY" not in reason


def test_hidden_list_can_grow_shrink_or_be_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    more = _settings(tmp_path, DPTTOOLS_SCRIPT_HIDDEN="+private/,*.sqlite")
    assert more.hidden(PurePosixPath("private/a.txt")) and more.hidden(PurePosixPath("db.sqlite"))
    assert more.hidden(PurePosixPath(".env")) and more.loosened == ()
    fewer = _settings(tmp_path, DPTTOOLS_SCRIPT_HIDDEN="-.env,*.env,*.key")
    assert not fewer.hidden(PurePosixPath(".env")) and fewer.hidden(PurePosixPath("a.pem"))
    assert any(".env" in line for line in fewer.loosened)
    nothing = _settings(tmp_path, DPTTOOLS_SCRIPT_HIDDEN="none")
    assert not nothing.hidden(PurePosixPath(".ssh/id_rsa"))
    with caplog.at_level(logging.WARNING):
        announce_policy(nothing)
    assert "DPTTOOLS_SCRIPT_HIDDEN" in caplog.text
    assert len(HIDDEN_PATTERNS) > 20
    with pytest.raises(ConfigError, match="does not hold"):
        _settings(tmp_path, DPTTOOLS_SCRIPT_HIDDEN="-notadefault")
    with pytest.raises(ConfigError, match="not a name or a path inside"):
        _settings(tmp_path, DPTTOOLS_SCRIPT_HIDDEN="+/etc/passwd")


def test_operator_held_patterns(tmp_path: Path) -> None:
    policy = _settings(tmp_path, DPTTOOLS_SCRIPT_HOLD="records/,*.sqlite")
    held = policy.held_back(PurePosixPath("records/2024/a.csv"), kind="file", mode=0o644)
    assert held is not None and held.kind == "operator"
    assert _file(policy, "db/app.SQLITE") is not None
    with pytest.raises(ConfigError, match="DPTTOOLS_SCRIPT_HOLD"):
        _settings(tmp_path, DPTTOOLS_SCRIPT_HOLD="../x")


def test_file_tools_policy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    environ = {
        "DPTTOOLS_WORKSPACE_DIR": str(ws),
        "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
        "DPTTOOLS_CACHE_DIR": "off",
    }
    tools = load_settings(environ).file_tools_changes()
    reason = _file(tools, "CLAUDE.md")
    assert reason is not None and "DPTTOOLS_WRITE_ALLOW=agent" in reason
    assert _file(tools, ".env") is None  # secrets stay the file tools' to write
    assert _file(tools, "notes.md") is None
    allowed = load_settings({**environ, "DPTTOOLS_WRITE_ALLOW": "agent"}).file_tools_changes()
    assert _file(allowed, "CLAUDE.md") is None
    assert _file(allowed, ".git/hooks/pre-commit") is not None
    with caplog.at_level(logging.WARNING):
        announce_policy(allowed)
    assert "DPTTOOLS_WRITE_ALLOW" in caplog.text
    for never in ("executable", "vcs", "link"):
        with pytest.raises(ConfigError, match="DPTTOOLS_WRITE_ALLOW"):
            load_settings({**environ, "DPTTOOLS_WRITE_ALLOW": never})


def test_verdicts_do_not_depend_on_the_working_folder(
    tmp_path: Path, policy: ChangePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _file(policy, "a.txt", workspace=Path(os.path.relpath(tmp_path / "ws"))) is None


def test_the_server_logs_what_the_operator_loosened_at_start_up(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {
        **os.environ,
        "DPTTOOLS_WORKSPACE_DIR": str(tmp_path),
        "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
        "DPTTOOLS_SCRIPT_APPLY": "agent",
        "DPTTOOLS_SCRIPT_HIDDEN": "-.npmrc",
        "DPTTOOLS_WRITE_ALLOW": "build",
    }
    done = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if "Change policy loosened" in line]
    assert len(lines) == 3, done.stderr
    assert "WARNING" in lines[0] and "DPTTOOLS_SCRIPT_APPLY" in lines[0]
    assert ".npmrc" in lines[1] and "DPTTOOLS_WRITE_ALLOW" in lines[2]


def test_the_configuration_page_lists_every_pattern() -> None:
    from doc_processing_std_tools.change_policy import HELD_PATTERNS

    page = Path(__file__).resolve().parents[3] / "docs" / "std-tools" / "configuration.md"
    if not page.is_file():
        pytest.skip("the documentation is not part of this checkout")
    text = page.read_text(encoding="utf-8")
    for pattern in (*HIDDEN_PATTERNS, *(p for ps in HELD_PATTERNS.values() for p in ps)):
        assert f"`{pattern}`" in text, pattern
