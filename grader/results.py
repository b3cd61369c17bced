"""Plain result records written to grades.csv, results.json and feedback."""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field


class Status(str, enum.Enum):
    """How a submission's grading ended; the first that applies wins."""

    GRADED = "graded"
    TAMPERED = "tampered"
    SUSPICIOUS = "suspicious"
    TIMED_OUT = "timed_out"
    KERNEL_DIED = "kernel_died"
    OUT_OF_MEMORY = "out_of_memory"
    TOO_MUCH_OUTPUT = "too_much_output"
    TOO_LARGE = "too_large"  # over a limit of the grader before anything ran: bytes, cells, nesting, source, time
    INVALID_NOTEBOOK = "invalid_notebook"
    INVALID_FOLDER = "invalid_folder"  # a folder that cannot be graded: unsafe name, symbolic link, unreadable
    MISSING = "missing"
    GRADER_ERROR = "grader_error"  # the grader failed, not the submission: no score; retried by the next run


@dataclass
class TestResult:
    grade_id: str
    points: float
    max_points: float
    passed: bool  # every point of the test: a test judged in parts that passed some scores their points, not passed
    message: str
    parts: list[dict] = field(default_factory=list)  # the skills judged apart: {"what", "points", "passed"}


@dataclass
class NotebookResult:
    student_id: str
    assignment_id: str
    notebook: str
    status: Status
    message: str
    tests: list[TestResult] = field(default_factory=list)
    manual_max_score: float = 0.0
    flags: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    seconds: float = 0.0
    submitted_at: str | None = None  # when it was submitted, UTC, nbgrader's form (grader.submission.timestamps)
    submitted_note: str = ""  # why the learner's time was not used (an unreadable or absurd timestamp.txt)

    @property
    def score(self) -> float:
        return round(sum(t.points for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_points for t in self.tests), 6)

    @property
    def reported_score(self) -> float | None:
        """The score as written to grades.csv and results.json: none when the grader itself failed."""
        return None if self.status is Status.GRADER_ERROR else self.score

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status.value
        data["score"] = self.reported_score
        data["max_score"] = self.max_score
        return data

    @classmethod
    def from_dict(cls, data: dict) -> NotebookResult:
        data = dict(data)
        data.pop("score", None)
        data.pop("max_score", None)
        data["status"] = Status(data["status"])
        data["tests"] = [TestResult(**t) for t in data.get("tests", [])]
        return cls(**data)


@dataclass(frozen=True)
class LatePenalty:
    """Points taken off a late notebook (``grader.nbgrader_adapter.late``): a share of the points it earned."""

    points: float  # taken off the total
    earned: float  # the points the penalty is a share of (autograded, plus hand grades once all are in)
    seconds_late: float  # after the due date (0: on time)
    due: str  # the due date, "YYYY-MM-DD HH:MM UTC"
    message: str  # in plain words, for the learner and the instructor

    def to_dict(self) -> dict:
        return asdict(self)
