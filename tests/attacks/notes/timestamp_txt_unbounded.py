"""timestamp.txt in a submission folder is read without any of intake's discipline (grader/nbgrader_db._submitted_at).

``export_grades`` (``grade --gradebook URL``, formgrader's Autograde) reads
``submitted/{student}/{assignment}/timestamp.txt`` with ``Path.read_text()``: it follows symbolic links, opens
FIFOs and devices (blocking), and reads without a size limit. The file is the learner's (nbgrader submit writes
it on the learner's side and it travels with the submission). One learner's folder can therefore
  * hang the whole class's gradebook export forever: timestamp.txt is a FIFO (open() blocks) -- shown below;
  * exhaust the grader's memory: timestamp.txt -> /dev/zero (read_text never ends) -- shown under RLIMIT_AS;
  * set its own submission time (any parseable date, e.g. before the deadline: no late penalty in nbgrader).
It runs after every notebook was graded, in the single writer thread, so the run never records any grade.
Run: .venv/bin/python tests/attacks/notes/timestamp_txt_unbounded.py
Expect (what the grader SHOULD do): a link/FIFO/device/oversized timestamp.txt is ignored (None) at once.
"""
import os, resource, subprocess, sys, tempfile, threading
from pathlib import Path
root = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(root))
from grader.nbgrader_adapter.db import _submitted_at

base = Path(tempfile.mkdtemp())
for student in ("fifo", "zero", "forged"):
    (base / student / "collectives").mkdir(parents=True)
os.mkfifo(base / "fifo" / "collectives" / "timestamp.txt")
(base / "zero" / "collectives" / "timestamp.txt").symlink_to("/dev/zero")
(base / "forged" / "collectives" / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")

print("forged:", _submitted_at(base, "forged", "collectives"))
worker = threading.Thread(target=_submitted_at, args=(base, "fifo", "collectives"), daemon=True)
worker.start(); worker.join(5)
print("FIFO: still blocked after 5 s:", worker.is_alive())
child = subprocess.run([sys.executable, "-c", f"""
import resource, sys; sys.path.insert(0, {str(root)!r})
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from pathlib import Path
from grader.nbgrader_adapter.db import _submitted_at
_submitted_at(Path({str(base)!r}), "zero", "collectives")
"""], capture_output=True, text=True, timeout=120)
print("/dev/zero link: child ended with", child.returncode, child.stderr.strip().splitlines()[-1:] )
