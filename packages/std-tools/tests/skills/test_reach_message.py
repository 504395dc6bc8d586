"""The start-up warning and the refusal about a script user who cannot reach the Python
interpreter name the file the folders lead to, not a virtual environment's link to it
(issue 28): the folder at fault is on the way to the link's target."""

from __future__ import annotations

from pathlib import Path

from doc_processing_std_tools.skills.scripts._containment import ScriptUser, reach_problem

NOBODY = ScriptUser("nobody", 65534, 65534)


def test_the_message_names_the_resolved_interpreter_and_the_link(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    real = private / "python3.12"
    real.write_text("", encoding="utf-8")
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    message = reach_problem(NOBODY, {"the Python interpreter": link})
    assert message is not None
    assert f"on the way to the Python interpreter {real.resolve()} (which {link} links to)" in (
        message
    )


def test_a_path_that_is_no_link_is_named_once(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    real = private / "python3.12"
    real.write_text("", encoding="utf-8")
    message = reach_problem(NOBODY, {"the Python interpreter": real.resolve()})
    assert message is not None
    assert message.endswith(f"on the way to the Python interpreter {real.resolve()}")
