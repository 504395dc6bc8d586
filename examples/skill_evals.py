"""Skill trigger evals on the example skills, each with its evals/eval_queries.json.

Without a model it runs the offline check: for every labelled query, is the skill in the
catalog block the agent would inject, and does the skills server's search rank it first?
With ``--model`` a real model runs every query a few times and the report says how often
it loaded each skill. Either way an HTML report is written.

    python examples/skill_evals.py                           # offline, no API key
    python examples/skill_evals.py --model anthropic:claude-sonnet-5 --runs 3 --split 0.4
    python examples/skill_evals.py --report /tmp/skill-evals.html

The same from the command line: ``dpt-agent eval --config examples/agent.yaml --offline``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from doc_processing_toolkit import Agent
from doc_processing_toolkit.evals import TriggerReport, evaluate_triggers, render_html

EXAMPLES = Path(__file__).resolve().parent


def main() -> None:
    """Evaluate the example skills and print a summary per skill."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a real model, e.g. anthropic:claude-sonnet-5")
    parser.add_argument("--runs", type=int, default=3, help="runs per query with --model")
    parser.add_argument("--split", type=float, help="validation share, e.g. 0.4")
    parser.add_argument("--report", help="where to write the HTML report")
    options = parser.parse_args()

    overrides = {"model": options.model} if options.model else {}
    agent = Agent.from_yaml(EXAMPLES / "agent.yaml", **overrides)
    try:
        # No event loop here: evaluate_triggers runs to the end and returns the report.
        report = evaluate_triggers(
            agent, runs=options.runs, split=options.split, offline=not options.model
        )
    finally:
        agent.close()
    assert isinstance(report, TriggerReport)

    print(f"mode: {report.mode}, {len(report.queries)} queries")
    for skill in report.skills.values():
        print(
            f"{skill.name}: {skill.pass_rate:.0%} of {len(skill.queries)} queries pass; "
            f"failing: {len(skill.failing)}"
        )
        for query in skill.failing[:3]:
            label = "should trigger" if query.should_trigger else "should not trigger"
            print(f"  [{label}] {query.query}")
    target = Path(options.report or Path(tempfile.gettempdir()) / "skill-evals.html")
    target.write_text(render_html(report), encoding="utf-8")
    print(f"HTML report: {target}")


if __name__ == "__main__":
    main()
