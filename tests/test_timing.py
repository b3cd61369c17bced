"""The suite's budget (tests/timing.py): it grows only for CPU that programs outside the suite took."""
from __future__ import annotations

import subprocess
import sys
import time

from timing import OthersCpu, allowance

BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass"


def test_the_budget_grows_by_the_share_of_the_cores_others_took():
    assert allowance(1260, 0, 2, 1200) == (1260, 0)
    assert allowance(1260, 1200, 2, 1200) == (1260 * 1.5, 0.5)  # a hog on one of two cores all along
    assert allowance(1260, 10**6, 2, 1200) == (2520, 1.0)  # never more than twice the budget
    assert allowance(1260, 50, 2, 0) == (1260, 0)


def test_a_hog_outside_the_suite_counts_and_the_suites_own_work_does_not():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # stands for the suite
    try:
        others = OthersCpu(every_s=0.2, root=sleeper.pid)
        hog = subprocess.Popen([sys.executable, "-c", BUSY.format(s=1.5)])  # not the sleeper's: someone else's
        time.sleep(0.5)
        assert hog.pid not in others.ours and sleeper.pid in others.ours
        hog.wait(timeout=60)
        time.sleep(0.1)
        assert others.seconds() >= 0.5, "a CPU hog beside the suite did not widen its budget"
    finally:
        sleeper.kill()

    mine = OthersCpu(every_s=0.2)  # this process is the suite: its own child is never someone else's
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(s=1.0)])
    time.sleep(0.5)
    assert child.pid in mine.ours
    child.wait(timeout=60)
    mine.seconds()


def test_reading_a_notebook_builds_no_grammar_at_import():
    """Every Jupyter server, nbgrader command, papermill run and grader command imports nbformat, and so jsonschema.
    jsonschema 4.24+ (pulled in through jupyter-events' ``format-nongpl`` extra) imports rfc3987-syntax, which builds
    an Earley parser from its grammar at import: 1.1-1.9 CPU-s in each of those processes (measured: `nbgrader
    --version` 2.8 CPU-s with it, 1.3 without; a JupyterLab server 3.3 to ready with it, 1.6 without). pyproject.toml
    pins jsonschema below that."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys, nbformat, jupyter_events.logger, jsonschema._format; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", f"imported at start: {done.stdout.strip()} (pyproject.toml pins jsonschema)"
