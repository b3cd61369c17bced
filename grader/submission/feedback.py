"""Feedback HTML for the learner: results and their own work, no hidden tests, no active content.

Test cells show only their public part; their outputs are replaced by the
judge's message, so neither hidden code nor reference values (which a
traceback could quote) reach the page.

Hidden tests stay hidden. Their source reaches the learner's kernel only when
the first cell holding hidden tests runs; from then on learner code can read
it in many ways (IPython's ``In``, ``_ih``, ``Out`` and history, the frame of
the test cell that called a learner function, ``linecache``) and print it,
encoded as it likes, from any later cell. So the page shows no output of any
cell at or after the first hidden cell (a note says it was withheld): that
rule needs no guess about how the text was read or disguised, which redaction
alone would. Outputs before it cannot hold hidden source, since the kernel
had never received any; those that carry a display id are dropped all the
same, since a later cell could update them. As defence in depth every text
shown is also redacted of verbatim hidden lines, and an exception name in a
judge's message (a learner class can be given any name) is shown only when it
is a builtin one.

No script runs: every learner-derived string is escaped or cleaned by
``sanitize``, images are data: png/jpeg only, and the page carries a
Content-Security-Policy that allows no script, no request and no form.
"""
from __future__ import annotations

import builtins
import html
import re

from grader import cells

from grader.submission import sanitize
from grader.results import NotebookResult
from grader.cells import HIDDEN

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
WITHHELD = "output withheld: produced after hidden tests had run"
REDACTED = "[hidden test line removed]"
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}
_RAISED = re.compile(r"; the test cell raised (.*)$", re.S)

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
.pass{color:#1a7f37}.fail{color:#b42318}pre{background:#f6f8fa;padding:.6rem;overflow:auto}
.cell{margin:1rem 0}.result{border-left:4px solid #999;padding:.3rem .8rem;background:#fafafa}
.withheld{color:#666;font-style:italic}
"""


class _Text:
    """Escapes text for the page after removing every verbatim line of hidden test source."""

    def __init__(self, nb):
        sources = [str(c.source) for c in (nb.cells if nb is not None else []) if c.cell_type == "code"]
        # Hidden source is the course's: only its test cells (restored from source/) hold it. A learner cell can
        # hold "hidden" blocks of its own, and every one of their lines would be replaced in every text shown
        # (100,000 lines times 60,000 outputs: minutes of the grader's time for one page).
        tests = [str(c.source) for c in (nb.cells if nb is not None else []) if cells.is_autograded_test(c)]
        hidden = {line.strip() for source in tests for block in HIDDEN.findall(source) for line in block.splitlines()}
        public = {line.strip() for source in sources for line in HIDDEN.sub("", source).splitlines()}
        self.hidden = sorted((line for line in hidden - public if len(line) > 12), key=len, reverse=True)

    def redact(self, text) -> str:
        text = str(text)
        for line in self.hidden:
            text = text.replace(line, REDACTED)
        return text

    def __call__(self, text) -> str:
        return html.escape(self.redact(text))

    def judge(self, message: str) -> str:
        raised = _RAISED.search(message)
        if raised and raised.group(1) not in BUILTIN_ERRORS:
            message = message[:raised.start()] + "; the test cell raised an exception"
        return self(message)


def _output_html(output, text: _Text) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"<pre>{text(str(output.get('text', ''))[:20000])}</pre>"
    if kind == "error":
        return f"<pre class='fail'>{text(output.get('ename', ''))}: {text(str(output.get('evalue', ''))[:2000])}</pre>"
    data = output.get("data", {})
    if "transient" in output or "display_id" in str(output.get("metadata", {})):
        return ""  # an update from a later cell could have replaced it
    for mime in ("image/png", "image/jpeg"):
        uri = f"data:{mime};base64," + re.sub(r"\s", "", str(data.get(mime, "")))
        if mime in data and sanitize.safe_image(uri, page=True):
            return f"<img alt='figure' src='{uri}'>"
    if "text/plain" in data and sanitize.RECORD not in data:
        return f"<pre>{text(str(data['text/plain'])[:20000])}</pre>"
    return ""


def _manual_html(manual, text: _Text) -> str:
    """The answers graded by hand in formgrader (``grader.nbgrader_adapter.manual_grades.ManualGrade``), with the comments."""
    rows = "".join(
        f"<tr><td>{text(g.grade_id)}</td><td>{'to be graded' if g.score is None else f'{g.score:g}'} / "
        f"{g.max_score:g}</td><td>{text(g.comment)}</td></tr>" for g in manual)
    return f"<h2>Graded by hand</h2><table><tr><th>answer</th><th>points</th><th>comment</th></tr>{rows}</table>"


def render(result: NotebookResult, executed, manual=None) -> str:
    """The learner's page; ``manual``: the hand-graded answers read back from nbgrader's gradebook, if any."""
    text = _Text(executed)
    graded_by_hand = bool(manual) and all(g.score is not None for g in manual)
    hand_points = sum(g.score for g in manual) if graded_by_hand else 0.0
    by_test = {t.grade_id: t for t in result.tests}
    parts = [
        f"<!doctype html><html><head><meta http-equiv='Content-Security-Policy' content=\"{CSP}\">",
        "<meta charset='utf-8'>",
        f"<title>Feedback: {text(result.assignment_id)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{text(result.assignment_id)} · {text(result.student_id)}</h1>",
        f"<p>Status: <b>{text(result.status.value)}</b>. {text(result.message)}</p>",
        f"<p>Autograded score: <b>{result.score:g} / {result.max_score:g}</b>"
        + (f"; graded by hand: <b>{hand_points:g} / {result.manual_max_score:g}</b>; total: "
           f"<b>{result.score + hand_points:g} / {result.max_score + result.manual_max_score:g}</b>."
           if graded_by_hand else
           f"; {result.manual_max_score:g} more points are graded by hand." if result.manual_max_score else "")
        + "</p>",
        "<table><tr><th>test</th><th>points</th><th>result</th></tr>",
    ]
    for test in result.tests:
        css = "pass" if test.passed else "fail"
        parts.append(
            f"<tr><td>{text(test.grade_id)}</td><td>{test.points:g} / {test.max_points:g}</td>"
            f"<td class='{css}'>{text.judge(test.message)}</td></tr>"
        )
    parts.append("</table>")
    if manual:
        parts.append(_manual_html(manual, text))
    if result.tampering:
        parts.append("<h2>Restored cells</h2><ul>" + "".join(f"<li>{text(t)}</li>" for t in result.tampering) + "</ul>")
    parts.append("<h2>Your notebook</h2>")
    notebook = executed.cells if executed is not None else []
    first_hidden = next((i for i, c in enumerate(notebook) if c.cell_type == "code" and HIDDEN.search(str(c.source))),
                        len(notebook))
    budget = sanitize.MarkdownBudget()
    for index, cell in enumerate(notebook):
        gid = cells.grade_id(cell)
        if cell.cell_type == "markdown":
            source = text.redact(cell.source)
            shown = (sanitize.markdown_to_html(source, cell.get("attachments")) if budget.take(source)
                     else f"<pre>{html.escape(sanitize.as_text(source))}</pre>")
            parts.append(f"<div class='cell'>{shown}</div>")
            continue
        if cell.cell_type != "code" or "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        public = HIDDEN.sub("# (hidden tests run here when grading)\n", str(cell.source))
        if gid in by_test:
            test = by_test[gid]
            css = "pass" if test.passed else "fail"
            parts.append(
                f"<div class='cell'><pre>{text(public)}</pre><div class='result {css}'>"
                f"{text(gid)}: {test.points:g} / {test.max_points:g} · {text.judge(test.message)}</div></div>"
            )
            continue
        if index >= first_hidden:
            outputs = f"<p class='withheld'>{WITHHELD}</p>" if cell.get("outputs") else ""
        else:
            outputs = "".join(_output_html(o, text) for o in cell.get("outputs", []))
        parts.append(f"<div class='cell'><pre>{text(public)}</pre>{outputs}</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
