"""Feedback HTML for the learner: results and their own work, no hidden tests, no active content.

Test cells show only their public part; their outputs are replaced by the
judge's message, so neither hidden code nor reference values (which a
traceback could quote) reach the page.

Hidden tests stay hidden. Once hidden source reaches the learner's kernel,
learner code can read it in many ways (IPython's ``In``, ``_ih``, ``Out`` and
history, the frame of the test cell that called a learner function,
``linecache``) and print it, encoded as it likes. So every hidden part runs
after the learner's last cell (``grader.submission.order``), and the page shows
every output of every learner cell and of each test's visible part (the kernel
had received no hidden source when they were produced) and none of the hidden
parts' outputs, nor anything a learner thread or hook printed while they ran
(those outputs are the hidden parts'). That rule needs no guess about how the
text was read or disguised, which redaction alone would. A notebook graded
before hidden parts ran last (its autograded copy has no such mark) keeps the
old rule: no output of any cell at or after the first hidden cell (a note says
it was withheld). Outputs that carry a display id are dropped all the same,
since a later cell could update them. As defence in depth every text shown is
also redacted of verbatim hidden lines, and an exception name in a judge's
message (a learner class can be given any name) is shown only when it is a
builtin one.

No script runs: every learner-derived string is escaped or cleaned by
``sanitize``, images are data: png/jpeg only, and the page carries a
Content-Security-Policy that allows no script, no request and no form.
"""
from __future__ import annotations

import builtins
import html
import re

from grader import cells

from grader.submission import order, sanitize
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
.pass{color:#1a7f37}.fail{color:#b42318}.partial{color:#9a6700}
.id{color:#666;font-size:.85em;white-space:nowrap}
pre{background:#f6f8fa;padding:.6rem;white-space:pre-wrap;overflow-wrap:anywhere;overflow-x:hidden}
td:nth-child(2){white-space:nowrap}td:last-child,.result,p,li{overflow-wrap:anywhere}
img{max-width:100%;height:auto}
.cell{margin:1rem 0}.result{border-left:4px solid #999;padding:.3rem .8rem;background:#fafafa}
.withheld{color:#666;font-style:italic}.status{font-size:1.05rem}
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


def _css(test) -> str:
    return "pass" if test.passed else "partial" if test.points > 0 else "fail"


def _pending(result: NotebookResult, executed, manual) -> tuple[float, str]:
    """(points still to be graded by hand, which answers): all of them until formgrader holds a score for each."""
    graded = {g.grade_id: g for g in manual or [] if g.score is not None}
    points = max(0.0, result.manual_max_score - sum(g.max_score for g in graded.values()))
    answers = [cells.grade_id(c) for c in (executed.cells if executed is not None else []) if cells.is_manual_answer(c)]
    waiting = [a for a in answers if a not in graded]
    if len(waiting) == 1:
        return points, "the written answer"
    return points, f"the {len(waiting)} written answers" if waiting else "the written answers"


def _header(result: NotebookResult, executed, manual, text: _Text) -> list[str]:
    """Status and points; "graded" only when nothing is still to be graded by hand."""
    pending, answers = _pending(result, executed, manual) if result.manual_max_score else (0.0, "")
    by_hand = sum(g.score for g in manual or [] if g.score is not None)
    status = result.status.value
    if result.status.value == "graded" and pending:
        status = "autograded, hand grading pending"
    score = f"Autograded score: <b>{result.score:g} / {result.max_score:g}</b>"
    if pending:
        score += (f"; <b>{pending:g} point{'s' if pending != 1 else ''} ({text(answers)}) still to be graded by "
                  "hand</b>")
        if by_hand:
            score += f"; graded by hand so far: <b>{by_hand:g}</b>"
        score += (". When your instructor has graded it, Fetch Feedback again in the Assignment List: the new page "
                  "has those points, their comments and your total")
    elif result.manual_max_score:
        score += (f"; graded by hand: <b>{by_hand:g} / {result.manual_max_score:g}</b>; total: "
                  f"<b>{result.score + by_hand:g} / {result.max_score + result.manual_max_score:g}</b>")
    return [f"<p class='status'>Status: <b>{text(status)}</b>. {text(result.message)}</p>", f"<p>{score}.</p>"]


def _late_html(result: NotebookResult, late, pending: bool, text: _Text) -> list[str]:
    """The due date and what being late cost (``grader.results.LatePenalty``), in plain words."""
    if late is None:
        return []
    line = text(late.message)
    if late.points:
        most = result.max_score + result.manual_max_score
        line += f" Total after the penalty: <b>{round(late.earned - late.points, 6):g} / {most:g}</b>."
        if pending:
            line += " It is computed again, on all your points, when your written answers are graded."
    return [f"<p class='late'>{line}</p>"]


#: the lessons' receipt cell (coursekit.receipt.keep_receipt): in the grader's run it finds no saved notebook and
#: says how to fix that, which is advice for the learner's own run, not for the feedback page
RECEIPT_CELL = "keep-evidence"
RECEIPT_NOTE = ("Your receipt is written when you run this cell in your own notebook; the grader's run of it writes "
                "none and changes no grade.")


def _shown_outputs(cell, index: int, first_hidden: int, hidden_last: bool, text: _Text) -> str:
    """A cell's outputs as the learner may see them (see the module's docstring)."""
    outputs = cell.get("outputs", [])
    if cells.is_autograded_test(cell):
        visible = cells.visible_outputs(cell) if hidden_last else None
        return "".join(_output_html(o, text) for o in outputs[:visible]) if visible else ""
    if not hidden_last and index >= first_hidden:
        return f"<p class='withheld'>{WITHHELD}</p>" if outputs else ""
    if cells.grade_id(cell) == RECEIPT_CELL and outputs:  # the grader's run has no saved notebook to read
        return f"<p class='withheld'>{RECEIPT_NOTE}</p>"
    return "".join(_output_html(o, text) for o in outputs)


def render(result: NotebookResult, executed, manual=None, late=None) -> str:
    """The learner's page; ``manual``: the hand-graded answers read back from nbgrader's gradebook, if any; ``late``:
    the notebook's late penalty (``grader.results.LatePenalty``), when its assignment has a due date."""
    text = _Text(executed)
    by_test = {t.grade_id: t for t in result.tests}
    parts = [
        f"<!doctype html><html lang='en'><head><meta http-equiv='Content-Security-Policy' content=\"{CSP}\">",
        "<meta charset='utf-8'>",
        f"<title>Feedback: {text(result.assignment_id)}</title><style>{_STYLE}</style></head><body><main>",
        f"<h1>{text(result.assignment_id)} · {text(result.student_id)}</h1>",
        *_header(result, executed, manual, text),
        *_late_html(result, late, bool(result.manual_max_score) and (not manual or any(g.score is None for g in manual)),
                    text),
        "<table><tr><th>test</th><th>points</th><th>result</th></tr>",
    ]
    for test in result.tests:
        parts.append(
            f"<tr><td>the {text(cells.test_name(test.grade_id))} test <span class='id'>{text(test.grade_id)}</span>"
            f"</td><td>{test.points:g} / {test.max_points:g}</td>"
            f"<td class='{_css(test)}'>{text.judge(test.message)}</td></tr>"
        )
    parts.append("</table>")
    if manual:
        parts.append(_manual_html(manual, text))
    if result.tampering:
        parts.append("<h2>Restored cells</h2><ul>" + "".join(f"<li>{text(t)}</li>" for t in result.tampering) + "</ul>")
    parts.append("<h2>Your notebook</h2>")
    notebook = executed.cells if executed is not None else []
    hidden_last = order.hidden_ran_last(executed)
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
        public = HIDDEN.sub("# (hidden tests: run after your last cell when grading)\n", str(cell.source))
        outputs = _shown_outputs(cell, index, first_hidden, hidden_last, text)
        if gid in by_test and cells.is_autograded_test(cell):
            test = by_test[gid]
            parts.append(
                f"<div class='cell'><pre>{text(public)}</pre>{outputs}<div class='result {_css(test)}'>"
                f"{text(gid)}: {test.points:g} / {test.max_points:g} · {text.judge(test.message)}</div></div>"
            )
            continue
        parts.append(f"<div class='cell'><pre>{text(public)}</pre>{outputs}</div>")
    parts.append("</main></body></html>")
    return "\n".join(parts)
