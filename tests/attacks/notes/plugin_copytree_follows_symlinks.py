"""formgrader's Autograde (grader.nbgrader_adapter.plugins.ProjectAutograde) dereferences symbolic links in a submission.

`python -m grader grade` refuses a submitted notebook that is a symbolic link (intake.locate, lstat) and a
student or assignment folder that is one (batch.discover). But ProjectAutograde.preprocess first copies the
submitted folder with ``shutil.copytree(submitted, tmp/...)`` -- symlinks=False, i.e. every link is FOLLOWED
and its target's bytes are copied, with the instructor's rights -- and then grades the copy, where the links
are gone. So a submission folder holding ``collectives.ipynb -> <course>/source/collectives/collectives.ipynb``
(the instructor's notebook, solutions and hidden tests) is graded as the learner's work: full marks. Any file
the instructor can read can be submitted this way (another learner's notebook: copying without a trace), and a
link to a directory (``x -> /``) makes copytree walk the instructor's whole file system, and any extra file in
the folder is copied whole (a 1 TiB sparse file, which intake never reads, is written out in full to /tmp): disk/time DoS.
The status is 'tampered' (the hidden tests differ from the release) but the score is 23/23; a link to another
learner's notebook is graded 'graded', with no trace.

Here subprocess.run is replaced by an in-process grade of the same --submissions folder (the real command is
``python -m grader grade --submissions tmp ...``); everything before it is the plugin's own code.
Run: .venv/bin/python tests/attacks/notes/plugin_copytree_follows_symlinks.py   (about 30 s, one kernel)
Expect (what the grader SHOULD do): invalid_notebook ("is a symbolic link"), score 0.
"""
import subprocess, sys, tempfile, types
from pathlib import Path
root = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(root))
from grader.nbgrader_adapter import plugins as nbgrader_plugins
from grader.classroom.batch import grade_all
from grader.layout import Course
from grader.submission.pipeline import Settings

base = Path(tempfile.mkdtemp())
submitted = base / "submitted" / "mallory" / "collectives"
submitted.mkdir(parents=True)
(submitted / "collectives.ipynb").symlink_to(root / "source" / "collectives" / "collectives.ipynb")
out = base / "out"
seen = {}


def fake_run(command, **kwargs):  # what `python -m grader grade --submissions TMP` would do, in process
    folder = Path(command[command.index("--submissions") + 1])
    copied = folder / "mallory" / "collectives" / "collectives.ipynb"
    seen["is_link_after_copy"] = copied.is_symlink()
    seen["has_hidden_tests"] = "BEGIN HIDDEN TESTS" in copied.read_text()
    seen["results"] = grade_all(folder, Course(root), Settings(out=out), workers=1)
    return types.SimpleNamespace(returncode=0, stderr="")


nbgrader_plugins.subprocess = types.SimpleNamespace(run=fake_run)
pre = nbgrader_plugins.ProjectAutograde(course_root=str(out))
resources = {"nbgrader": {"student": "mallory", "assignment": "collectives", "notebook": "collectives",
                          "db_url": "sqlite:///" + str(base / "gb.db")},
             "metadata": {"path": str(submitted)}}
try:
    pre.preprocess(None, resources)
except Exception as error:  # reading the autograded copy back from course_root=out is incidental here
    print("(after grading)", type(error).__name__)
print("link still a link after the plugin's copy:", seen["is_link_after_copy"])
print("copied file holds the instructor's hidden tests:", seen["has_hidden_tests"])
for r in seen["results"]:
    print(r.student_id, r.status.value, r.score, "/", r.max_score, r.message[:120])
