"""The class report (``python -m grader report --html``), opened in Chromium as an instructor opens it.

The class with every status is the session's graded corpus (samples, wrong answers and attacks: timed out, out of
memory, tampered, suspicious, invalid...); its report's counts are compared with counts made here from its
``results.json``. A class of hostile ids and messages must render as text. Screenshots go to
test-artifacts/browser/class-report-*.png (the README's picture is docs/images/class-report.png).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path


from grader.classroom import class_data, class_page
from grader.results import NotebookResult, Status
from grader.results import TestResult as Judged
from grader.term.gradebook import Gradebook
from grader.submission.judge import NOT_CHECKED, NOT_REACHED
from test_browser import ARTIFACTS, BROWSER, ROOT, _setup_browser

HOSTILE = ["<img src=x onerror=alert(1) data-pwned>", "\"><svg onload=alert(2) data-pwned>", "=HYPERLINK(\"x\")",
           "</details></table><b data-pwned>bold</b>"]


def _report(out: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "grader", "report", "--out", str(out), "--html"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"class report: {out / 'class-report' / 'index.html'}" in done.stdout
    return out / "class-report" / "index.html"


def _open(page: Path, name: str) -> dict:
    _setup_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["node", str(BROWSER / "report.mjs"), str(page), str(ARTIFACTS / f"class-report-{name}.png")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(seen: dict, first_header: str, second_header: str) -> list[list[str]]:
    """The rows (without the headers) of the page's tables whose first two headers are these."""
    return [row for table in seen["tables"] if table and table[0][:2] == [first_header, second_header]
            for row in table[1:]]


def test_the_report_of_the_class_with_every_status_counts_what_results_json_says(graded):
    _, out = graded["__meta__"]
    seen = _open(_report(out), "every-status")
    results = json.loads((out / "results.json").read_text())
    assert seen["scripts"] == 0 and seen["csp_violations"] == [] and seen["dialogs"] == []
    assert seen["images"] == seen["images_loaded"] == 1  # the score histograms
    assert seen["details_open"] == 0  # aggregates first, the learners folded

    statuses = Counter(r["status"] for r in results)
    assert len(statuses) >= 6 or os.environ.get("GRADER_SCENARIOS"), statuses  # the corpus: every kind of ending
    assert {row[0]: int(row[1]) for row in _table(seen, "status", "notebooks")} == dict(statuses)

    passed, graded_n, unreached = Counter(), Counter(), Counter()
    for r in results:
        if r["status"] == "graded":
            for t in r["tests"]:
                graded_n[(r["assignment_id"], t["grade_id"])] += 1
                passed[(r["assignment_id"], t["grade_id"])] += t["passed"]
                unreached[(r["assignment_id"], t["grade_id"])] += (not t["passed"]) and NOT_CHECKED in t["message"]
    rows = _table(seen, "notebook", "test")
    assert {(a, g): p for a, g, _, p, *_ in rows} == {k: f"{passed[k]}/{graded_n[k]}" for k in graded_n}
    rates = [passed[(a, g)] / graded_n[(a, g)] for a, g, *_ in rows]
    assert rates == sorted(rates), "the hardest test comes first"

    mistakes = Counter()
    for r in results:
        if r["status"] == "graded":
            for t in r["tests"]:
                if not t["passed"] and NOT_CHECKED not in t["message"]:
                    mistakes[(r["assignment_id"], t["grade_id"], t["message"])] += 1
    shown = {(row[1], row[2], row[3]): int(row[0]) for row in _table(seen, "learners", "notebook") if len(row) == 5}
    assert shown == dict(mistakes)
    full = not os.environ.get("GRADER_SCENARIOS")
    assert sum(unreached.values()) > 0 or not full  # blank notebooks: tests never reached, counted apart

    by_notebook = Counter(r["assignment_id"] for r in results)
    graded_by_notebook = Counter(r["assignment_id"] for r in results if r["status"] == "graded")
    assert {row[0]: row[1] for row in _table(seen, "notebook", "graded")} == {
        a: f"{graded_by_notebook[a]}/{n}" for a, n in by_notebook.items()}
    assert shown or not full, "the corpus has wrong answers the grader names"

    with open(out / "class-report" / "statuses.csv", newline="") as handle:
        flagged = Counter(row["status"] for row in csv.DictReader(handle))
    assert {s: n for s, n in flagged.items() if s != "graded"} == {s: n for s, n in statuses.items() if s != "graded"}
    # Similar answers (issue #45): the demo learners' own code shares nothing that is listed; the corpus's learners,
    # who make the same few mistakes on the same solution, may be listed, and every one listed is in the table
    with open(out / "class-report" / "similar.csv", newline="") as handle:
        similar = list(csv.DictReader(handle))
    assert not [r for r in similar if r["student"].startswith("sample-") and r["other_student"].startswith("sample-")]
    assert len(_table(seen, "notebook", "learner")) == min(len(similar), class_page.MAX_PAIRS)


def test_the_report_of_the_sample_class(graded, tmp_path):
    """The demo class alone (the session's graded samples, under their own ids), as `make demo` reports it."""
    _, out = graded["__meta__"]
    book = Gradebook(tmp_path)
    samples = [r for r in Gradebook(out).all_results() if r.student_id.startswith("sample-")]
    for result in samples:
        book.save(result, None)
    seen = _open(_report(tmp_path), "samples")
    assert seen["scripts"] == 0 and seen["csp_violations"] == [] and seen["images_loaded"] == 1
    rows = _table(seen, "notebook", "graded")
    assert sum(int(row[1].split("/")[1]) for row in rows) == len(samples)
    assert {row[0] for row in rows} == {r.assignment_id for r in samples}


def _hostile_class(out: Path, learners: int) -> list[NotebookResult]:
    book, results = Gradebook(out), []
    for i in range(learners):
        student = HOSTILE[i % len(HOSTILE)] + (f"-{i}" if i >= len(HOSTILE) else "")
        message = HOSTILE[(i + 1) % len(HOSTILE)]
        status = [Status.GRADED, Status.GRADED, Status.TIMED_OUT, Status.TAMPERED][i % 4]
        tests = [Judged("test-a", 2.0 * (i % 2), 2.0, bool(i % 2), "passed" if i % 2 else message),
                 Judged("test-b", 0.0, 1.0, False, f"value: {NOT_REACHED}")]
        result = NotebookResult(student, "sharded_step", "sharded_step.ipynb", status, message, tests,
                                manual_max_score=2.0, seconds=1.0 + i % 7)
        book.save(result, None)
        results.append(result)
    return results


def test_hostile_ids_and_messages_render_as_text(tmp_path):
    _hostile_class(tmp_path, 8)
    seen = _open(_report(tmp_path), "hostile")
    assert seen["injected"] == 0 and seen["dialogs"] == [] and seen["scripts"] == 0 and seen["csp_violations"] == []
    # WCAG 2.1 A/AA (axe-core): nothing critical or serious on the instructor's page, hostile names and all
    assert [v for v in seen["axe"] if v["impact"] in ("critical", "serious")] == [], seen["axe"]
    flagged = {row[0] for row in _table(seen, "learner", "notebook")}
    assert any(HOSTILE[2] in name for name in flagged)  # the ids shown as the text they are
    mistakes = _table(seen, "learners", "notebook")
    assert {row[3] for row in mistakes if len(row) == 5} <= set(HOSTILE)  # the grader's messages, as text
    with open(tmp_path / "class-report" / "scores.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert all(not row["student"].startswith(("=", "+", "-", "@")) for row in rows)
    assert any(row["student"] == "'" + HOSTILE[2] for row in rows)  # a formula quoted, as grades.csv does


def test_the_report_of_a_class_of_a_thousand_stays_small_and_lists_everyone_in_its_csv(tmp_path):
    results = _hostile_class(tmp_path, 1000)
    summary = class_data.summarize(results)
    index = class_page.write(summary, tmp_path)
    assert index.stat().st_size < 5 * 1024 * 1024
    text = index.read_text()
    assert "more in <a href='mistakes.csv'>mistakes.csv</a>" in text  # the page folds, the CSV has them all
    with open(tmp_path / "class-report" / "mistakes.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    failed = sum(1 for r in results if r.status is Status.GRADED for t in r.tests if not t.passed)
    assert len(rows) == failed


def test_before_the_first_report_the_link_finds_a_page_that_says_how_to_make_one(tmp_path):
    page = class_page.placeholder(tmp_path)
    assert page is not None and "python -m grader report --out . --html" in page.read_text()
    class_page.write(class_data.summarize(_hostile_class(tmp_path, 4)), tmp_path)
    report = page.read_text()
    assert class_page.placeholder(tmp_path) is None and page.read_text() == report  # a report is never replaced


ORIGINAL = '''def two_averages(shards):
    every_value = np.concatenate(shards)
    weighted = float(every_value.sum() / every_value.size)
    per_shard = []
    for shard in shards:
        per_shard.append(float(shard.sum() / shard.size))
    unweighted = float(sum(per_shard) / len(per_shard))
    print("checking", len(shards), "shards:", weighted, unweighted)
    return weighted, unweighted
'''
RENAMED = ORIGINAL.replace("every_value", "values").replace("weighted", "g").replace("per_shard", "locals_") \
    .replace("unweighted", "m").replace("shard", "block")
OTHER = '''def two_averages(shards):
    counts = [len(s) for s in shards]
    sums = [float(np.sum(s)) for s in shards]
    if not counts or min(counts) == 0:
        raise ValueError("every shard needs a value")
    return sum(sums) / sum(counts), float(np.mean([t / c for t, c in zip(sums, counts)]))
'''
PLANTED = {"original": ORIGINAL, "copier": ORIGINAL, "renamer": RENAMED, "other": OTHER,
           "blank-1": None, "blank-2": None, "solution-1": "solution", "solution-2": "solution",
           HOSTILE[0]: ORIGINAL.replace('"checking"', '"</pre><script>alert(1)</script>"')}


def _planted_class(out: Path, course) -> None:
    """Autograded notebooks of local_mean_diagnosis whose first answer cell each learner wrote as ``PLANTED`` says
    (None: the released TODO, "solution": the instructor's)."""
    import nbformat

    from grader import cells

    solution = {cells.grade_id(c): c.source for c in course.read_source("local_mean_diagnosis").cells}
    for student, code in PLANTED.items():
        nb = course.read_release("local_mean_diagnosis")
        for cell in nb.cells:
            if cells.grade_id(cell) == "two-averages" and code is not None:
                cell.source = solution["two-averages"] if code == "solution" else code
            elif cells.is_solution(cell) and cell.cell_type == "code":
                cell.source = solution[cells.grade_id(cell)]  # the other answers: the solution's, shared by all
        folder = out / "autograded" / student / "local_mean_diagnosis"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "local_mean_diagnosis.ipynb")


def test_similar_answers_list_planted_copies_and_nothing_else(tmp_path):
    """Issue #45: identical code, and the same code with every name changed, are listed; the solution, blank
    notebooks and independent code are not; the code is shown as text, side by side, the shared passages marked."""
    from grader.classroom import similarity
    from grader.layout import Course

    course = Course.default()
    _planted_class(tmp_path, course)
    pairs = similarity.find(tmp_path, course)
    found = {frozenset((p.first.student, p.second.student)): p for p in pairs}
    assert set(found) == {frozenset(pair) for pair in [("original", "copier"), ("original", "renamer"),
                                                      ("copier", "renamer"), ("original", HOSTILE[0]),
                                                      ("copier", HOSTILE[0]), ("renamer", HOSTILE[0])]}
    assert found[frozenset(("original", "copier"))].identical and not found[frozenset(("original", "renamer"))].identical
    assert all(min(p.shares) >= similarity.THRESHOLD for p in pairs)
    _hostile_class(tmp_path, 4)
    index = class_page.write(class_data.summarize(Gradebook(tmp_path).all_results()), tmp_path, similar=pairs)
    text = index.read_text()
    assert "A reason to look, never a verdict" in text and "<script>" not in text and "&lt;/pre&gt;&lt;script&gt;" in text
    assert text.count("<details class='pair'>") == len(pairs) and "<mark>" in text
    with open(tmp_path / "class-report" / "similar.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(pairs) and {r["identical"] for r in rows} == {"yes", "no"}
    assert sum(HOSTILE[0] in (r["student"], r["other_student"]) for r in rows) == 3  # ids as the text they are
