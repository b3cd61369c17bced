"""The class report: one self-contained HTML page of a graded class, and its tables as CSV files beside it.

``write(summary, folder, out)`` lays out what ``class_data.summarize`` computed: aggregates first (score histograms,
each test's pass rate with the hardest first, the most common mistakes, statuses, grading time), the learners behind
each figure folded in ``<details>``. The page needs no network and runs no script (a Content-Security-Policy forbids
both); the plots are matplotlib SVGs embedded as ``data:`` images, which cannot run script either; every value a
learner chose (ids, and the grader's messages, which may quote learner-made shapes) is HTML-escaped. For a large class
each folded list shows at most ``MAX_NAMES`` learners and points to the CSV file that has them all.

Links: each learner's feedback page (``../feedback/...``, relative to the grading output) and formgrader's page for
that submission (``../../formgrader/manage_students/STUDENT/ASSIGNMENT``), which resolve when the instructor's
JupyterLab serves the report at ``/files/class-report/index.html``.
"""
from __future__ import annotations

import base64
import csv
import html
import io
from pathlib import Path
from urllib.parse import quote

from grader.classroom.class_data import ClassSummary, NotebookScores, tables
from grader.classroom.similarity import THRESHOLD, Pair
from grader.term.gradebook import Gradebook, atomic_write

FOLDER = "class-report"
MAX_NAMES = 200
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#222}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0}td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.5em 1em}
.card b{font-size:1.5em;display:block}details{margin:.2em 0}summary{cursor:pointer}
.bad{color:#a40000}.note{color:#555;font-size:.92em}img.plot{max-width:100%}meter{width:8em}
.side{display:flex;gap:1em}.side>div{flex:1;min-width:0}.side pre{overflow-x:auto;background:#f8f8f8;padding:.5em;
font-size:.85em}mark{background:#ffe08a;color:#222}
"""
MAX_PAIRS = 100


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) \
        else str(value)


def _plot(scores: list[NotebookScores]) -> str:
    """Score histograms, one panel per notebook, as an SVG ``data:`` image."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text as text: a small file
    panels = [s for s in scores if s.totals] or scores[:1]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(3.6 * max(1, len(panels)), 2.6), squeeze=False)
    for axis, s in zip(axes[0], panels):
        top = max(s.max_total, 1.0)
        axis.hist(s.totals, bins=min(20, max(5, int(top) + 1)), range=(0, top), color="#3b6ea8", edgecolor="white")
        axis.set_title(s.assignment, fontsize=10)
        axis.set_xlabel(f"total points (of {s.max_total:g})", fontsize=9)
        axis.set_ylabel("learners", fontsize=9)
        axis.tick_params(labelsize=8)
        axis.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<img class='plot' alt='score histograms, one per notebook' src='data:image/svg+xml;base64,{data}'>"


def _links(student: str, assignment: str, notebook: str) -> str:
    """The learner's name, linked to their feedback page and to formgrader's page of that submission."""
    feedback = Gradebook(Path("..")).feedback_path(student, assignment, notebook)
    formgrader = "../../formgrader/manage_students/" + quote(student, safe="") + "/" + quote(assignment, safe="")
    return (f"<a href='{_e(quote(feedback.as_posix()))}'>{_e(student)}</a> "
            f"(<a href='{_e(formgrader)}'>formgrader</a>)")


def _names(keys, csv_name: str) -> str:
    shown = [_links(s, a, n) for s, a, n in keys[:MAX_NAMES]]
    more = len(keys) - len(shown)
    tail = f" … and {more} more in <a href='{csv_name}'>{csv_name}</a>" if more > 0 else ""
    return f"<details><summary>{len(keys)} learner{'s' if len(keys) != 1 else ''}</summary>{', '.join(shown)}" \
           f"{tail}</details>"


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td class='n'>{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(summary: ClassSummary, *, title: str = "Class report", similar: list[Pair] | None = None) -> str:
    """The report as HTML text; its links are relative to ``{out}/class-report/``. ``similar``: the pairs of
    learners whose own code is identical or very similar (``grader.classroom.similarity``); None: not looked for."""
    statuses = summary.statuses
    graded = statuses.get("graded", 0)
    cards = [("learners", summary.learners), ("notebooks", summary.results), ("graded", graded),
             ("not graded", summary.results - graded)]
    parts = [f"<h1>{_e(title)}</h1>",
             "<div class='cards'>" + "".join(f"<div class='card'><b>{v}</b>{k}</div>" for k, v in cards) + "</div>",
             "<p class='note'>Made by <code>python -m grader report --html</code> from the grader's results and "
             "nbgrader's gradebook. Tables as CSV: " + ", ".join(f"<a href='{n}'>{n}</a>" for n in tables(summary))
             + ".</p>"]
    parts += ["<h2 id='scores'>Scores</h2>", _plot(summary.notebooks),
              _table(["notebook", "graded", "mean", "median", "of", "hand grading pending", "late"],
                     [[_e(s.assignment), f"{len(s.totals)}/{s.submissions}", _num(s.mean), _num(s.median),
                       _num(float(s.max_total)), str(s.hand_pending), str(s.late)] for s in summary.notebooks],
                     {1, 2, 3, 4, 5, 6}),
              "<p class='note'>Totals are the autograded points plus the hand grades so far, less late "
              "penalties, of the notebooks the grader graded.</p>"]
    parts += ["<h2 id='tests'>Tests, hardest first</h2>",
              _table(["notebook", "test", "points", "passed", "pass rate"],
                     [[_e(t.assignment), _e(t.grade_id), _num(t.points), f"{t.passed}/{t.graded}",
                       f"<meter min='0' max='1' value='{t.rate:.3f}'></meter> {100 * t.rate:.0f}%"]
                      for t in summary.tests], {2, 3})]
    parts += ["<h2 id='mistakes'>What the grader found, most common first</h2>",
              "<p class='note'>Each failed test with the grader's message (the named mistake where the diagnosis "
              "recognised one), and the learners it was said to.</p>",
              _table(["learners", "notebook", "test", "the grader said", "who"],
                     [[str(len(m.learners)), _e(m.assignment), _e(m.grade_id), _e(m.message),
                       _names(m.learners, "mistakes.csv")] for m in summary.mistakes], {0})
              if summary.mistakes else "<p>No test failed in a notebook that reached it.</p>"]
    if summary.unreached:
        parts += ["<h3>Tests the notebook never reached</h3>",
                  "<p class='note'>The test's values were never recorded: the notebook stopped before it, at an "
                  "unfinished TODO or an earlier error. Counted apart, so a test is not called hard for this.</p>",
                  "<details><summary>" + f"{sum(len(m.learners) for m in summary.unreached)} tests not reached"
                  "</summary>" + _table(["learners", "notebook", "test", "who"],
                                         [[str(len(m.learners)), _e(m.assignment), _e(m.grade_id),
                                           _names(m.learners, "mistakes.csv")] for m in summary.unreached], {0})
                  + "</details>"]
    if similar is not None:
        parts += _similar(similar)
    by_status: dict[str, list] = {}
    for f in summary.flagged:
        by_status.setdefault(f.status, []).append(f)
    parts += ["<h2 id='statuses'>Statuses</h2>",
              _table(["status", "notebooks"], [[_e(s), str(n)] for s, n in statuses.items()], {1})]
    for status, rows in by_status.items():
        shown = rows[:MAX_NAMES]
        more = f"<p>… and {len(rows) - len(shown)} more in <a href='statuses.csv'>statuses.csv</a></p>" \
            if len(rows) > len(shown) else ""
        parts.append(f"<details><summary class='bad'>{_e(status)}: {len(rows)}</summary>"
                     + _table(["learner", "notebook", "reason"],
                              [[_links(f.student, f.assignment, f.notebook), _e(f.assignment),
                                _e(f.message)] for f in shown]) + more + "</details>")
    parts += ["<h2 id='time'>Where the grading time went</h2>",
              _table(["notebook", "submissions", "total s", "mean s", "slowest s"],
                     [[_e(t.assignment), str(t.count), _num(t.total_s, 1), _num(t.mean_s, 1), _num(t.max_s, 1)]
                      for t in summary.timing], {1, 2, 3, 4}),
              "<details><summary>Slowest submissions</summary>"
              + _table(["learner", "notebook", "seconds", "status"],
                       [[_links(s.student, s.assignment, s.notebook), _e(s.assignment),
                         _num(s.seconds, 1), _e(s.status)] for s in summary.slowest], {2}) + "</details>"]
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body><main>" + "\n".join(parts) + "</main></body></html>")


def _similar(pairs: list[Pair], shown: int = MAX_PAIRS) -> list[str]:
    """The similar-answers section: a note that it is a reason to look, then each pair folded, the two learners'
    own code side by side with the shared passages marked (every character of it escaped)."""
    parts = ["<h2 id='similar'>Similar answers</h2>",
             "<p class='note'>Learners whose own code in an assignment (their answer cells and the cells they added; "
             "the course's given code and the solution left out) is identical, or shares at least "
             f"{100 * THRESHOLD:.0f}% of one of them with the other (copydetect's fingerprints: names and "
             "layout do not matter). <b>A reason to look, never a verdict</b>: short answers can coincide, and a "
             "shared passage does not say who wrote it. Identical code ran once in the grader, for both.</p>"]
    if not pairs:
        return parts + ["<p>No two learners' own code is identical or this similar.</p>"]
    rows = [[_e(p.assignment), _links(p.first.student, p.assignment, p.first.notebook),
             _links(p.second.student, p.assignment, p.second.notebook),
             "identical" if p.identical else f"{100 * p.shares[0]:.0f}% / {100 * p.shares[1]:.0f}%"] for p in pairs]
    parts.append(f"<details><summary>{len(pairs)} pair(s)</summary>"
                 + _table(["notebook", "learner", "learner", "shared"], rows[:shown])
                 + (f"<p>… and {len(pairs) - shown} more in <a href='similar.csv'>similar.csv</a></p>"
                    if len(pairs) > shown else "") + "</details>")
    for p in pairs[:shown]:
        columns = "".join(f"<div><b>{_e(code.student)}</b><pre>{_marked(code.text, spans)}</pre></div>"
                          for code, spans in zip((p.first, p.second), p.marked))
        parts.append(f"<details class='pair'><summary>{_e(p.first.student)} and {_e(p.second.student)} · "
                     f"{_e(p.assignment)}</summary><div class='side'>{columns}</div></details>")
    return parts


def _marked(text: str, spans) -> str:
    """``text`` escaped, the character ranges ``spans`` in <mark>."""
    out, at = [], 0
    for start, end in sorted((max(0, int(s)), min(len(text), int(e))) for s, e in spans):
        if start < at or start >= end:
            continue
        out += [_e(text[at:start]), "<mark>", _e(text[start:end]), "</mark>"]
        at = end
    return "".join(out) + _e(text[at:])


def _csv(header: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    cell = Gradebook._cell
    writer.writerows([["" if v is None else (cell(v) if isinstance(v, str) else v) for v in row] for row in rows])
    return buffer.getvalue()


def write(summary: ClassSummary, out: Path, *, title: str = "Class report",
          similar: list[Pair] | None = None) -> Path:
    """Write ``{out}/class-report/index.html`` and its CSV tables (``similar.csv``: every similar pair); return the
    page's path."""
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name, (header, rows) in tables(summary).items():
        atomic_write(folder / name, _csv(header, rows))
    if similar is not None:
        atomic_write(folder / "similar.csv", _csv(
            ["assignment", "student", "other_student", "identical", "share", "other_share"],
            [[p.assignment, p.first.student, p.second.student, "yes" if p.identical else "no", round(p.shares[0], 3),
              round(p.shares[1], 3)] for p in similar]))
    index = folder / "index.html"
    atomic_write(index, page(summary, title=title, similar=similar))
    return index


def placeholder(out: Path) -> Path | None:
    """``{out}/class-report/index.html`` saying how to make the report, where there is none yet (formgrader's
    sidebar links it before the first grading); None when a report is there already."""
    index = out / FOLDER / "index.html"
    if index.exists():
        return None
    atomic_write(index, f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><title>Class report</title>"
                        f"<style>{STYLE}</style></head><body><main><h1>Class report</h1><p>No class has been reported yet. "
                        "After grading, run <code>python -m grader report --out . --html</code> in the course root "
                        "(<code>make demo</code> does): this page then shows the scores, the hardest tests, the "
                        "most common mistakes, the statuses and the grading time.</p></main></body></html>")
    return index
