"""nbgrader's exchange, read and written by the grading service: inbound submissions in, feedback pages out.

nbgrader's ``submit`` writes ``{exchange}/{course}/inbound/{student}+{assignment}+{timestamp}+{random}/`` holding the
notebooks, ``timestamp.txt`` and ``submission_secret.txt``; its ``fetch_feedback`` looks for
``{exchange}/{course}/feedback/{md5(secret + notebook id)}.html``. On a shared server the inbound folders are
written by learners (nbgrader makes them world-writable), so everything here is read as hostile input: names are
checked against the course's id rule, only regular files are read (never through a link, never blocking), each
with a size bound, and nothing else of the folder is copied.
"""
from __future__ import annotations

import hashlib
import os
import pwd
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from grader import identifiers
from grader.submission.intake import shown_name

MAX_SECRET_CHARS = 256  # nbgrader writes 128 hex digits
MAX_TIMESTAMP_CHARS = 100
_HEX = re.compile(r"[0-9a-f]{16,256}")


@dataclass(frozen=True)
class Arrival:
    """One folder in the inbound directory, as its name says (``problem`` is set when it cannot be graded)."""

    name: str  # the folder's name: the key under which the service remembers it
    folder: Path
    student_id: str
    assignment_id: str
    timestamp: str  # the learner's word (nbgrader's), shown, never used to decide anything
    problem: str | None = None


def course_dir(exchange: Path, course_id: str) -> Path:
    return exchange / course_id


def ensure_feedback_dir(exchange: Path, course_id: str) -> Path:
    """``{exchange}/{course}/feedback``, created as nbgrader's release_feedback would (0755: names unguessable)."""
    folder = course_dir(exchange, course_id) / "feedback"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    return folder


def owner(mode_uid: int) -> str:
    try:
        return pwd.getpwuid(mode_uid).pw_name
    except KeyError:
        return f"uid {mode_uid}"


def arrivals(exchange: Path, course_id: str, known: set[str], assignments: list[str], *,
             check_owner: bool = True) -> list[Arrival]:
    """New inbound folders (not in ``known``), oldest name first; unusable ones carry their ``problem``.

    ``check_owner`` (nbgrader's ``CollectApp.check_owner``): the inbound directory is writable by every learner,
    so a folder named ``victim+assignment+...`` is graded as the victim's only when the victim's Unix account owns
    it; otherwise anyone could spend another learner's attempts or replace the grade that counts."""
    inbound = course_dir(exchange, course_id) / "inbound"
    try:
        with os.scandir(inbound) as entries:
            names = sorted(e.name for e in entries if e.name not in known)
    except OSError:
        return []
    found = []
    for name in names:
        folder = inbound / name
        parts = name.split("+")
        student, assignment = (parts + ["", ""])[:2]
        timestamp = parts[2] if len(parts) >= 3 else ""
        problem = None
        try:
            info = os.lstat(folder)
        except OSError:
            continue  # gone already (the instructor cleaned up)
        mode = info.st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
            problem = "the submission is not a folder (a link or a file): submit from the Assignment List"
        elif len(parts) not in (3, 4):
            problem = "the submission's folder name is not nbgrader's student+assignment+timestamp form"
        elif not identifiers.valid(student):
            problem = identifiers.refusal("student id", shown_name(student), student)
        elif check_owner and owner(info.st_uid) != student:
            problem = (f"the submission names the student {shown_name(student)!r} but belongs to the Unix account "
                       f"{shown_name(owner(info.st_uid))!r}: submit from your own account")
        elif assignment not in assignments:
            problem = (f"unknown assignment {shown_name(assignment)!r} "
                       f"(this course has {', '.join(assignments)})")
        found.append(Arrival(name, folder, student if not problem else shown_name(student),
                             assignment, shown_name(timestamp[:MAX_TIMESTAMP_CHARS]), problem))
    return found


def age(arrival: Arrival) -> float:
    """Seconds since the folder last changed (0 when it cannot be read)."""
    try:
        return max(0.0, time.time() - os.lstat(arrival.folder).st_mtime)
    except OSError:
        return 0.0


def read_small(path: Path, limit: int) -> str | None:
    """A small regular file's text, or None: never through a link, never blocking on a FIFO, at most ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode("utf-8", "replace")


def secret(arrival: Arrival) -> str | None:
    """The submission's secret (nbgrader's ``submission_secret.txt``), or None when it is missing or malformed."""
    text = read_small(arrival.folder / "submission_secret.txt", MAX_SECRET_CHARS)
    text = text.strip() if text else ""
    return text if _HEX.fullmatch(text) else None


def copy_notebook(arrival: Arrival, notebook: str, dest: Path, limit: int) -> bool:
    """Copy the one notebook the assignment has (a regular file of at most ``limit`` bytes) and the timestamp into
    ``dest`` (a ``submitted/{student}/{assignment}`` folder); False when there is no such notebook. Whatever else
    the folder holds is not copied: the grader reads the notebook it names and nothing more."""
    dest.mkdir(parents=True, exist_ok=True)
    copied = False
    try:
        fd = os.open(arrival.folder / notebook, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        fd = None
    if fd is not None:
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_size <= limit:
                with open(dest / notebook, "wb") as out:
                    left = limit + 1
                    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                        out.write(chunk)
                        left -= len(chunk)
                copied = left > 0
                if not copied:
                    os.unlink(dest / notebook)  # grew past the limit while being read
        finally:
            os.close(fd)
    (dest / "timestamp.txt").write_text(arrival.timestamp, encoding="utf-8")
    return copied


def feedback_name(submission_secret: str, notebook_id: str) -> str:
    """The file name nbgrader's fetch_feedback looks for (``nbgrader.utils.notebook_hash`` with a secret)."""
    digest = hashlib.md5()
    digest.update(submission_secret.encode("utf-8"))
    digest.update(notebook_id.encode("utf-8"))
    return digest.hexdigest() + ".html"


def release(exchange: Path, course_id: str, submission_secret: str, notebook_id: str, html: str) -> Path:
    """Put a feedback page where the learner's Fetch Feedback finds it, atomically (write, then rename)."""
    folder = ensure_feedback_dir(exchange, course_id)
    target = folder / feedback_name(submission_secret, notebook_id)
    temporary = folder / (target.stem + "-tmp.html")
    temporary.write_text(html, encoding="utf-8")
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target
