"""nbgrader configuration: stock ``nbgrader`` commands work on this course."""
import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "jax-distributed-training"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
# Collected work is real learners' work: never in samples/ (the demo class, rebuilt by `make samples`).
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# A course-local exchange (git-ignored; `python -m grader lab`/`instructor` create it): release ->
# fetch -> submit -> collect -> release_feedback -> fetch_feedback work on one machine out of the box.
# For learners with their own accounts on a shared server, point this (and lab/learner's copy) to a
# folder all of them can reach, as nbgrader's docs describe.
c.Exchange.root = os.path.join(c.CourseDirectory.root, "exchange")
# The rubric holds the grader's references; it never reaches students.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "figures", "rubric*.py"]

import warnings  # noqa: E402

from sqlalchemy.exc import SAWarning  # noqa: E402

# nbgrader 0.9 with SQLAlchemy 2.x warns on every first write of a submission ("Object of type
# <SubmittedAssignment> not in session ... will not proceed"): its add_submission links the new rows to the
# assignment and student before adding them, and a lazy load in between autoflushes. The rows are written all
# the same at its add and commit (tests/test_workflow.py reads them back). The course's own copy into the
# gradebook (grader/nbgrader_adapter/db.py) avoids the autoflush; nbgrader's own commands (formgrader's
# Autograde) cannot be changed from here, and the warning reads like a failed write, so there it is hidden.
warnings.filterwarnings("ignore", message=r"Object of type <\w+> not in session", category=SAWarning)

from nbgrader import preprocessors as pp  # noqa: E402
from grader.nbgrader_adapter.plugins import ScaffoldSolutions  # noqa: E402

# nbgrader 0.9's default pipeline, with ClearSolutions replaced by a version that
# writes each cell's own TODO message into its stub.
c.GenerateAssignment.preprocessors = [
    pp.IncludeHeaderFooter, pp.InstantiateTests, pp.LockCells, ScaffoldSolutions, pp.ClearOutput,
    pp.CheckCellMetadata, pp.ComputeChecksums, pp.SaveCells, pp.ClearHiddenTests, pp.ClearMarkScheme,
    pp.ComputeChecksums, pp.CheckCellMetadata,
]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# JAX compiles on first call; the default 30 s per cell is tight on 2 cores.
c.Execute.timeout = 180
c.ExecutePreprocessor.timeout = 180

# The kernels nbgrader starts (`nbgrader validate`, the Validate button) talk to it over loopback TCP; ipykernel 7
# warns "Kernel is running over TCP without encryption" unless the kernel manager gives it CurveZMQ keys. It
# does with this policy (pyzmq's wheels include CurveZMQ; the kernel spec declares it), and that traffic is then
# encrypted instead of the warning hidden.
import zmq  # noqa: E402

if zmq.has("curve"):
    c.KernelManager.transport_encryption = "auto"

# formgrader's Autograde and Generate Feedback buttons (and `nbgrader autograde`,
# `nbgrader generate_feedback`) run the course's grader and write its feedback page; no stock step
# that executes learner code, scores cells or shows hidden tests is left (grader/nbgrader_adapter/plugins.py).
from grader.nbgrader_adapter.plugins import IntakeGuard, ProjectAutograde, ProjectFeedback  # noqa: E402

# A submission whose student id, assignment id or notebook name breaks the course's rule (grader/identifiers.py)
# is refused before nbgrader's Autograde writes its student or submission into gradebook.db.
c.Autograde.exporter_class = IntakeGuard
c.IntakeGuard.course_root = c.CourseDirectory.root
c.Autograde.sanitize_preprocessors = [ProjectAutograde]
c.Autograde.autograde_preprocessors = []
c.GenerateFeedback.preprocessors = []
c.GenerateFeedback.exporter_class = ProjectFeedback
c.ProjectAutograde.course_root = c.CourseDirectory.root
c.ProjectFeedback.course_root = c.CourseDirectory.root
# Late submissions (docs/how-to/deadlines-and-lms.md): nbgrader's AssignLatePenalties plugin, the course's policy of
# a share of the earned points per started day late. The grader reads these settings from this file (no copy);
# with no due date (nbgrader's gradebook: `nbgrader db assignment add A --duedate=...`, or c.Deadlines.duedates
# below) nothing is late. nbgrader's own methods: c.PerDayPenalty.penalty_method = "zero" (or "none").
from grader.nbgrader_adapter.late import PerDayPenalty  # noqa: E402

c.AssignLatePenalties.plugin_class = PerDayPenalty
c.PerDayPenalty.percent_per_day = 10.0  # of the earned points, per started day after the due date and the grace
c.PerDayPenalty.grace_minutes = 15.0
c.PerDayPenalty.max_percent = 100.0
# c.Deadlines.duedates = {"sharded_step": "2026-12-08 12:00:00 UTC"}  # a due date in the gradebook wins
# `nbgrader export` writes its own file; grades.csv is the grader's (other columns).
c.ExportPlugin.to = "nbgrader_grades.csv"

# formgrader's MathJax comes from the instructor's server (jupyter-server-mathjax), not a CDN: this folder,
# searched before nbgrader's own formgrade templates, holds a mathjax macro that points there.
import nbgrader  # noqa: E402

c.HTMLExporter.extra_template_basedirs = [
    os.path.join(c.CourseDirectory.root, "lab", "instructor", "templates"),
    os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"),
]
