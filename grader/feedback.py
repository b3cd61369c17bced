"""Feedback HTML for the learner: results and their own work, no hidden tests.

Test cells show only their public part; their outputs are replaced by the
judge's message, so neither hidden code nor reference values (which a
traceback could quote) reach the page.
"""
from __future__ import annotations

import html

from nbconvert.filters.markdown_mistune import markdown2html_mistune

from . import cells
from .results import NotebookResult
from .variants import HIDDEN

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
.pass{color:#1a7f37}.fail{color:#b42318}pre{background:#f6f8fa;padding:.6rem;overflow:auto}
.cell{margin:1rem 0}.result{border-left:4px solid #999;padding:.3rem .8rem;background:#fafafa}
"""


def _output_html(output) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"<pre>{html.escape(output.get('text', '')[:20000])}</pre>"
    if kind == "error":
        return f"<pre class='fail'>{html.escape(output.get('ename', ''))}: {html.escape(output.get('evalue', '')[:2000])}</pre>"
    data = output.get("data", {})
    if "image/png" in data:
        return f"<img alt='figure' src='data:image/png;base64,{html.escape(str(data['image/png']))}'>"
    if "text/plain" in data and "application/vnd.jax-course.record+json" not in data:
        return f"<pre>{html.escape(str(data['text/plain'])[:20000])}</pre>"
    return ""


def render(result: NotebookResult, executed) -> str:
    by_test = {t.grade_id: t for t in result.tests}
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>Feedback: {html.escape(result.assignment_id)}</title><style>{_STYLE}</style>",
        f"<h1>{html.escape(result.assignment_id)} · {html.escape(result.student_id)}</h1>",
        f"<p>Status: <b>{html.escape(result.status.value)}</b>. {html.escape(result.message)}</p>",
        f"<p>Autograded score: <b>{result.score:g} / {result.max_score:g}</b>"
        + (f"; {result.manual_max_score:g} more points are graded by hand." if result.manual_max_score else "")
        + "</p>",
        "<table><tr><th>test</th><th>points</th><th>result</th></tr>",
    ]
    for test in result.tests:
        css = "pass" if test.passed else "fail"
        parts.append(
            f"<tr><td>{html.escape(test.grade_id)}</td><td>{test.points:g} / {test.max_points:g}</td>"
            f"<td class='{css}'>{html.escape(test.message)}</td></tr>"
        )
    parts.append("</table>")
    if result.tampering:
        parts.append("<h2>Restored cells</h2><ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in result.tampering) + "</ul>")
    parts.append("<h2>Your notebook</h2>")
    for cell in executed.cells if executed is not None else []:
        gid = cells.grade_id(cell)
        if cell.cell_type == "markdown":
            parts.append(f"<div class='cell'>{markdown2html_mistune(cell.source)}</div>")
            continue
        if cell.cell_type != "code" or "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        if gid in by_test:
            test = by_test[gid]
            public = HIDDEN.sub("# (hidden tests run here when grading)\n", cell.source)
            css = "pass" if test.passed else "fail"
            parts.append(
                f"<div class='cell'><pre>{html.escape(public)}</pre><div class='result {css}'>"
                f"{html.escape(gid)}: {test.points:g} / {test.max_points:g} · {html.escape(test.message)}</div></div>"
            )
            continue
        outputs = "".join(_output_html(o) for o in cell.get("outputs", []))
        parts.append(f"<div class='cell'><pre>{html.escape(cell.source)}</pre>{outputs}</div>")
    return "\n".join(parts)
