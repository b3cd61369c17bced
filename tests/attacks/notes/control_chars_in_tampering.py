"""Learner-chosen control characters (terminal escapes) reach grades.csv, the status message and `grader report`.

intake.read collects duplicate cell ids from the raw JSON *before* nbformat validates the id pattern
([a-zA-Z0-9-_]+), then renames every id; restore.rebuild quotes learner grade_ids in tampering notes ("an added
cell claims nbgrader metadata (GID)", "cell GID appears N times"). pipeline.prepare puts "duplicated cell ids:
ID..." FIRST in result.tampering, and decide_status copies the first three notes into the message. Nothing
passes these strings through intake.shown_name (which the folder names get), so ESC/BEL/CR reach
  * grades.csv (tampering and message columns, raw bytes) -> `cat`/`column -t`/`less -R` of the file runs them;
  * `python -m grader report`: message[:60] keeps exactly 4 learner characters after the 56-character prefix
    "1 instructor cell change(s) undone: duplicated cell ids: " -- enough for ESC c (reset the instructor's
    terminal, erasing the rows printed before) or ESC [8m (conceal every later row).
Run: .venv/bin/python tests/attacks/notes/control_chars_in_tampering.py   (no kernel runs)
Expect (what the grader SHOULD do): no C0/C1 control character in any stored or printed learner-derived text.
"""
import json, sys, tempfile
from pathlib import Path
root = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(root))
import nbformat
from grader.term.gradebook import Gradebook
from grader.layout import Course
from grader.submission.pipeline import Job, Settings, prepare
from grader.classroom.report import table
from grader.results import Status

course = Course(root)
nb = json.loads(Path(course.release_notebook("collectives")).read_text())
evil = "\x1bc\x1b]0;owned\x07\x1b[8m"
nb["cells"][0]["id"] = evil
nb["cells"][1]["id"] = evil
nb["cells"].append({"cell_type": "code", "id": "x", "metadata": {"nbgrader": {"grade_id": "\x1b[2J\x1b[H=1+1"}},
                    "source": "pass", "outputs": [], "execution_count": None})
folder = Path(tempfile.mkdtemp()) / "alice" / "collectives"
folder.mkdir(parents=True)
(folder / "collectives.ipynb").write_text(json.dumps(nb))
settings = Settings(out=folder.parents[1] / "out")
prepared = prepare(Job("alice", "collectives", folder), course, settings)
result = prepared.result
print("tampering notes:", [t for t in result.tampering])
# what decide_status would write once the notebook ran (tampering outranks everything but a dead kernel)
result.status = Status.TAMPERED
result.message = f"{len(result.tampering)} instructor cell change(s) undone: " + "; ".join(result.tampering[:3])
book = Gradebook(settings.out)
book.save(result, prepared.sha256)
book.write_tables(book.all_results())
raw = (settings.out / "grades.csv").read_bytes()
print("ESC bytes in grades.csv:", raw.count(b"\x1b"), " BEL:", raw.count(b"\x07"))
print("report row (repr):", repr(table(book.all_results()).splitlines()[-1]))
