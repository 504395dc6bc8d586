"""The eval report as one self-contained HTML page: no script, no network, every chart
an inline SVG.

The page holds a summary, a bar chart of each skill's pass rate (with its train and
validation rates when split), for each skill a chart of its queries' trigger rates
against the threshold line, then a table of the failing queries with what the model
loaded instead. Every text from a skill or a query is escaped.
"""

from __future__ import annotations

from html import escape

from .report import QueryResult, SkillReport, TriggerReport

__all__ = ["render_html"]

_PASS, _FAIL, _POSITIVE, _NEGATIVE = "#2e7d32", "#c62828", "#1565c0", "#6d4c41"

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1040px;
       color: #1b1b1b; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.summary { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 20px; }
.ok { color: #2e7d32; } .bad { color: #c62828; }
table { border-collapse: collapse; width: 100%; margin-top: 8px; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 5px 8px; text-align: left;
         vertical-align: top; }
th { background: #f6f6f6; }
td.num { text-align: right; white-space: nowrap; }
.legend span { margin-right: 16px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
"""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _pass_rate_chart(report: TriggerReport) -> str:
    """Horizontal bars: each skill's pass rate, with ticks for train and validation."""
    skills = list(report.skills.values())
    label_width, bar_width, row = 220, 560, 30
    height = row * len(skills) + 40
    width = label_width + bar_width + 80
    parts = [
        f'<svg class="chart pass-rates" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="Pass rate per skill">',
        f'<line x1="{label_width}" y1="10" x2="{label_width}" y2="{height - 25}" stroke="#999"/>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = label_width + tick * bar_width
        parts.append(
            f'<line x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{height - 25}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle">{tick * 100:.0f}%</text>'
        )
    for i, skill in enumerate(skills):
        y = 14 + i * row
        size = max(skill.pass_rate * bar_width, 1.0)
        colour = _PASS if skill.pass_rate == 1 else _FAIL
        parts.append(
            f'<text x="{label_width - 8}" y="{y + 15}" text-anchor="end">'
            f"{escape(skill.name)}</text>"
            f'<rect class="bar" data-skill="{escape(skill.name)}" x="{label_width}" '
            f'y="{y}" width="{size:.1f}" height="20" fill="{colour}">'
            f"<title>{escape(skill.name)}: {_pct(skill.pass_rate)} of queries pass</title>"
            "</rect>"
        )
        marks = [r for r in (skill.train_pass_rate, skill.validation_pass_rate) if r is not None]
        end = max([size, *(r * bar_width for r in marks)])
        parts.append(
            f'<text x="{label_width + end + 8:.1f}" y="{y + 15}">{_pct(skill.pass_rate)}</text>'
        )
        for name, rate, dash in (
            ("train", skill.train_pass_rate, ""),
            ("validation", skill.validation_pass_rate, ' stroke-dasharray="3 2"'),
        ):
            if rate is None:
                continue
            x = label_width + rate * bar_width
            parts.append(
                f'<line class="set-mark" x1="{x:.1f}" y1="{y - 2}" x2="{x:.1f}" '
                f'y2="{y + 22}" stroke="#111" stroke-width="2"{dash}>'
                f"<title>{name}: {_pct(rate)}</title></line>"
            )
    parts.append("</svg>")
    if report.split is not None:
        parts.append(
            '<p class="legend"><span>&#9474; train set</span>'
            "<span>&#9478; validation set</span></p>"
        )
    return "".join(parts)


def _query_chart(skill: SkillReport, threshold: float) -> str:
    """One bar per query (its trigger rate), should-trigger queries first, against the
    threshold line; a bar's colour says its label, its outline whether it passed."""
    queries = sorted(skill.queries, key=lambda q: not q.should_trigger)
    step = 22 if len(queries) <= 30 else 12
    left, top, plot = 48, 12, 180
    width = max(left + step * len(queries) + 90, 320)  # room for the threshold's label
    height = top + plot + 30
    parts = [
        f'<svg class="chart trigger-rates" data-skill="{escape(skill.name)}" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="Trigger rate of each query of {escape(skill.name)}">',
    ]
    for tick in (0, 0.5, 1):
        y = top + (1 - tick) * plot
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick * 100:.0f}%</text>'
        )
    for i, query in enumerate(queries):
        x = left + 4 + i * step
        size = max(query.trigger_rate * plot, 2.0)
        y = top + plot - size
        colour = _POSITIVE if query.should_trigger else _NEGATIVE
        outline = _PASS if query.passed else _FAIL
        label = "should trigger" if query.should_trigger else "should not trigger"
        parts.append(
            f'<rect class="bar query" x="{x}" y="{y:.1f}" width="{step - 6}" '
            f'height="{size:.1f}" fill="{colour}" stroke="{outline}" stroke-width="2">'
            f"<title>{escape(query.query)} ({label}): {_pct(query.trigger_rate)} "
            f"{'passed' if query.passed else 'failed'}</title></rect>"
        )
    y = top + (1 - threshold) * plot
    parts.append(
        f'<line class="threshold" x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" '
        f'stroke="{_FAIL}" stroke-width="2" stroke-dasharray="6 4">'
        f"<title>threshold {_pct(threshold)}</title></line>"
        f'<text x="{width - 12}" y="{y - 4:.1f}" text-anchor="end">threshold</text>'
        f'<line x1="{left}" y1="{top + plot}" x2="{width - 10}" y2="{top + plot}" '
        'stroke="#999"/>'
        "</svg>"
    )
    return "".join(parts)


def _instead(query: QueryResult) -> str:
    if not query.loaded_instead:
        return "nothing" if query.should_trigger else "—"
    loaded = query.loaded_instead.items()
    return ", ".join(f"{escape(name)} &times;{count}" for name, count in loaded)


def _failing_table(report: TriggerReport) -> str:
    rows = []
    for skill in report.skills.values():
        for query in skill.failing:
            expected = "yes" if query.should_trigger else "no"
            where = f"<br><small>{escape(query.error)}</small>" if query.error else ""
            if query.offline is not None:
                rank = query.offline.rank if query.offline.rank is not None else "none"
                block = "in the block" if query.offline.in_block else "not in the block"
                where += f"<br><small>{block}, search rank {rank}</small>"
            rows.append(
                f"<tr><td>{escape(skill.name)}</td><td>{escape(query.query)}{where}</td>"
                f"<td>{expected}</td><td class='num'>{query.triggers}/{query.runs} "
                f"({_pct(query.trigger_rate)})</td><td>{query.set or '—'}</td>"
                f"<td>{_instead(query)}</td></tr>"
            )
    if not rows:
        return '<p class="ok">Every query passed.</p>'
    return (
        '<table class="failing"><thead><tr><th>Skill</th><th>Query</th>'
        "<th>Should trigger</th><th>Triggered</th><th>Set</th><th>Loaded instead</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _skill_section(skill: SkillReport, report: TriggerReport) -> str:
    facts = [
        f"pass rate {_pct(skill.pass_rate)}",
        f"precision {_pct(skill.precision)}",
        f"recall {_pct(skill.recall)}",
    ]
    if skill.train_pass_rate is not None or skill.validation_pass_rate is not None:
        facts.append(
            f"train {_pct(skill.train_pass_rate)}, validation {_pct(skill.validation_pass_rate)}"
        )
    if report.mode == "model":
        facts.append(f"{skill.requests} requests, {skill.tokens} tokens")
    confusion = ", ".join(f"{escape(n)} &times;{c}" for n, c in skill.confusion.items())
    return (
        f'<section class="skill"><h2>{escape(skill.name)}</h2><p>{" · ".join(facts)}</p>'
        + (f"<p>Loaded instead on its queries: {confusion}</p>" if confusion else "")
        + _query_chart(skill, report.threshold)
        + "</section>"
    )


def render_html(report: TriggerReport, *, title: str = "Skill trigger evals") -> str:
    """`report` as one HTML page that needs nothing else (no script, no network)."""
    verdict = '<b class="ok">all passed</b>' if report.passed else '<b class="bad">some failed</b>'
    mode = (
        f"model {escape(report.model or '?')}, {report.runs} runs per query"
        if report.mode == "model"
        else "offline (no model: catalog block and search rank)"
    )
    data = report.to_json()
    cards = [
        ("Result", verdict),
        ("Pass rate", f"<b>{_pct(report.pass_rate)}</b>"),
        ("Queries", f"<b>{len(report.queries)}</b>"),
        ("Threshold", f"<b>{_pct(report.threshold)}</b>"),
    ]
    if report.mode == "model":
        cards.append(("Requests", f"<b>{data['requests']}</b>"))
        cards.append(("Tokens", f"<b>{data['tokens']}</b>"))
    if report.errors:
        cards.append(("Failed runs", f'<b class="bad">{report.errors}</b>'))
    summary = "".join(f'<div class="card">{name}{value}</div>' for name, value in cards)
    split = (
        f", validation share {report.split:g} (seed {report.seed})"
        if report.split is not None
        else ""
    )
    skipped = (
        "<p>Not evaluated (no eval file): "
        + ", ".join(escape(name) for name in report.skipped)
        + "</p>"
        if report.skipped
        else ""
    )
    legend = (
        '<p class="legend">'
        f'<span><i class="swatch" style="background:{_POSITIVE}"></i>should trigger</span>'
        f'<span><i class="swatch" style="background:{_NEGATIVE}"></i>should not trigger</span>'
        f'<span><i class="swatch" style="border:2px solid {_FAIL}"></i>failed</span>'
        f'<span><i class="swatch" style="border:2px solid {_PASS}"></i>passed</span></p>'
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{mode}{split}</p>"
        f'<div class="summary">{summary}</div>{skipped}'
        "<h2>Pass rate per skill</h2>"
        + _pass_rate_chart(report)
        + legend
        + "".join(_skill_section(skill, report) for skill in report.skills.values())
        + "<h2>Failing queries</h2>"
        + _failing_table(report)
        + "</body></html>\n"
    )
