"""Skill evals: measure whether a model loads each skill for the right requests.

A skill keeps labelled queries in ``evals/eval_queries.json``; `evaluate_triggers` reads
them through the agent's skills server, runs each query a few times with any provider,
locally or on Ray (the batch engine), and reports per query, per skill and overall
(`TriggerReport`, with ``to_json``); `render_html` draws the report as one self-contained
HTML page. ``dpt-agent eval`` does the same from the command line.

- `queries`: the eval file and the train/validation split;
- `probe`: one run, stopped as soon as the answer is known, and what it loaded;
- `report`: the report's data;
- `runner`: reading the eval set, running it (or checking it offline), building the report;
- `html`: the HTML report.
"""

from .html import render_html
from .probe import TriggerProbe, Verdict, loaded_skill, probe_run
from .queries import EVAL_FILE, EvalQuery, assign_sets, parse_eval_queries
from .report import OfflineCheck, QueryResult, SkillReport, TriggerReport
from .runner import EvalSet, evaluate_triggers, evaluate_triggers_async, load_eval_set

__all__ = [
    "EVAL_FILE",
    "EvalQuery",
    "EvalSet",
    "OfflineCheck",
    "QueryResult",
    "SkillReport",
    "TriggerProbe",
    "TriggerReport",
    "Verdict",
    "assign_sets",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "load_eval_set",
    "loaded_skill",
    "parse_eval_queries",
    "probe_run",
    "render_html",
]
