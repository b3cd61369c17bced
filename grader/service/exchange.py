"""nbgrader's exchange, read and written by the grading service: inbound submissions in, feedback pages out.

nbgrader's ``submit`` writes ``{exchange}/{course}/inbound/{student}+{assignment}+{timestamp}+{random}/`` holding the
notebooks, ``timestamp.txt`` and ``submission_secret.txt``; its ``fetch_feedback`` looks for
``{exchange}/{course}/feedback/{md5(secret + notebook id)}.html``. On a shared server the inbound folders are
written by learners (nbgrader makes them world-writable), so everything here is read as hostile input:

* a folder is opened once (``O_DIRECTORY | O_NOFOLLOW``), its type and owner read from that descriptor, and every
  file in it opened relative to the descriptor, never through a link, never blocking: a learner who swaps their
  folder for a link after it was looked at does not make the service (root) read through it;
* the notebook must be a regular file with one link, owned by the folder's owner, at most a size bound;
  ``timestamp.txt`` and the secret are small regular files; nothing else of the folder is copied;
* names are checked against the course's id rule, and a folder counts for the student it names only when that
  student's Unix account owns it (nbgrader's ``check_owner``).

The exchange's own folders (``{course}``, ``inbound``, ``feedback``) must be real folders the service's account
owns, and pages are written relative to the feedback folder's descriptor, so a learner who created the course
folder first (the exchange root is world-writable) cannot point ``feedback`` anywhere.
"""
from __future__ import annotations

import contextlib
import heapq
import hashlib
import os
import pwd
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from grader import identifiers
from grader.submission.intake import shown_name

MAX_SECRET_CHARS = 256  # nbgrader writes 128 hex digits
MAX_TIMESTAMP_CHARS = 100
_HEX = re.compile(r"[0-9a-f]{16,256}")
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class UnsafeExchange(RuntimeError):
    """The exchange's folders are not the service's own: it refuses to run on them."""


@dataclass(frozen=True)
class Arrival:
    """One folder in the inbound directory, as its name says (``problem`` is set when it cannot be graded)."""

    name: str  # the folder's name: the key under which the service remembers it
    folder: Path
    student_id: str
    assignment_id: str
    timestamp: str  # the learner's word (nbgrader's), shown, never used to decide anything
    problem: str | None = None
    owner: str = ""  # the Unix account that owns the folder (as lstat saw it)

    @property
    def shown(self) -> str:
        """The folder's name for the service's log: a name the learner chose, on one line and marked as theirs."""
        return identifiers.learner_text(self.name, label="learner's folder")


@dataclass(frozen=True)
class Opened:
    """An inbound folder, opened: every read goes through ``fd``."""

    folder: Path
    fd: int
    uid: int


def course_dir(exchange: Path, course_id: str) -> Path:
    return exchange / course_id


def owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _own_folder(path: Path, *, others_may_write: bool = False) -> None:
    """``path`` is a real folder of the service's account (and, unless said, not writable by every account; its
    group may write, as with nbgrader's ``groupshared`` exchange for several instructors)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder (a link or a file)"
    elif info.st_uid != os.geteuid():
        problem = f"belongs to {owner(info.st_uid)}, not to {owner(os.geteuid())}, who runs the service"
    elif not others_may_write and info.st_mode & 0o002:
        problem = f"can be written by every account (mode {oct(info.st_mode & 0o7777)})"
    if problem:
        raise UnsafeExchange(f"{path} {problem}: the service writes there as {owner(os.geteuid())}; create it as "
                             "that account (nbgrader's release_assignment does) or remove it")


def prepare(exchange: Path, course_id: str) -> None:
    """Create ``{course}/inbound`` and ``{course}/feedback`` as nbgrader would, or check the ones there are ours."""
    course = course_dir(exchange, course_id)
    _own_folder(course)
    if not course.exists():
        course.mkdir(parents=True)
        os.chmod(course, 0o755)
    _own_folder(course / "inbound", others_may_write=True)
    if not (course / "inbound").exists():
        (course / "inbound").mkdir()
        os.chmod(course / "inbound", 0o733)  # as nbgrader's release_assignment makes it: learners write, none lists
    # and sticky, whoever made it: only a submission's owner (or the grader) may rename or remove its folder
    os.chmod(course / "inbound", stat.S_IMODE(os.lstat(course / "inbound").st_mode) | stat.S_ISVTX)
    _own_folder(course / "feedback")
    if not (course / "feedback").exists():
        (course / "feedback").mkdir()
        os.chmod(course / "feedback", 0o711)  # as nbgrader's release_feedback makes it: a page is fetched by its
        # hashed name, never found by listing (each page names its learner and shows their score and outputs)


def arrivals(exchange: Path, course_id: str, known: set[str], assignments: list[str], *,
             check_owner: bool = True, cache: dict[str, Arrival] | None = None) -> list[Arrival]:
    """New inbound folders (not in ``known``), by name; unusable ones carry their ``problem``.

    ``check_owner`` (nbgrader's ``CollectApp.check_owner``): the inbound directory is writable by every learner,
    so a folder named ``victim+assignment+...`` is graded as the victim's only when the victim's Unix account owns
    it; otherwise anyone could spend another learner's attempts or replace the grade that counts. This look is a
    first sort only: ``open_folder`` checks again on the folder it opened. Raises ``OSError`` when the inbound
    folder cannot be listed (the caller says so; an empty answer would hide it). ``cache``: the arrivals of earlier
    listings by name, kept while still listed and undecided, so a folder is looked at (``lstat``) once, not on every
    scan while thousands wait their turn."""
    inbound = course_dir(exchange, course_id) / "inbound"
    with os.scandir(inbound) as entries:
        names = sorted(e.name for e in entries if e.name not in known)
    cache = {} if cache is None else cache
    for gone in set(cache).difference(names):
        del cache[gone]
    found = []
    for name in names:
        if name in cache:
            found.append(cache[name])
            continue
        folder = inbound / name
        parts = name.split("+")
        student, assignment = (parts + ["", ""])[:2]
        timestamp = parts[2] if len(parts) >= 3 else ""
        try:
            info = os.lstat(folder)
        except OSError:
            continue  # gone already (the instructor cleaned up)
        problem = _problem(info, parts, student, assignment, assignments, check_owner)
        cache[name] = Arrival(name, folder, student if not problem else shown_name(student), assignment,
                              shown_name(timestamp[:MAX_TIMESTAMP_CHARS]), problem, owner(info.st_uid))
        found.append(cache[name])
    return found


def fair_turns(found: list[Arrival], decided: dict[str, int], limit: int) -> list[Arrival]:
    """The folders one scan looks at: at most ``limit``, taken in turns across the accounts that own them (each
    account's k-th waiting folder after the ``decided`` ones it had), by name within a turn. One learner's thousands
    of folders neither hold back another learner's submission nor make a scan look at more than ``limit``."""
    turn: dict[str, int] = {}
    keyed = []
    for arrival in found:
        keyed.append((decided.get(arrival.owner, 0) + turn.get(arrival.owner, 0), arrival.name, arrival))
        turn[arrival.owner] = turn.get(arrival.owner, 0) + 1
    return [arrival for *_, arrival in heapq.nsmallest(limit, keyed, key=lambda k: k[:2])]


def _problem(info: os.stat_result, parts, student: str, assignment: str, assignments, check_owner: bool) -> str | None:
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return "the submission is not a folder (a link or a file): submit from the Assignment List"
    if len(parts) not in (3, 4):
        return "the submission's folder name is not nbgrader's student+assignment+timestamp form"
    if not identifiers.valid(student):
        return identifiers.refusal("student id", shown_name(student), student)
    if check_owner and owner(info.st_uid) != student:
        return (f"the submission names the student {shown_name(student)!r} but belongs to the Unix account "
                f"{shown_name(owner(info.st_uid))!r}: submit from your own account")
    if assignment not in assignments:
        return f"unknown assignment {shown_name(assignment)!r} (this course has {', '.join(assignments)})"
    return None


@contextlib.contextmanager
def open_folder(arrival: Arrival, *, check_owner: bool = True):
    """``(Opened, problem)``: the folder opened once (never through a link), its owner checked on the descriptor."""
    try:
        fd = os.open(arrival.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield None, "the submission's folder cannot be opened as a folder (it was replaced or removed)"
        return
    try:
        info = os.fstat(fd)
        problem = None
        if check_owner and owner(info.st_uid) != arrival.student_id:
            problem = (f"the submission names the student {shown_name(arrival.student_id)!r} but belongs to the "
                       f"Unix account {shown_name(owner(info.st_uid))!r}: submit from your own account")
        yield Opened(arrival.folder, fd, info.st_uid), problem
    finally:
        os.close(fd)


def _open_file(opened: Opened, name: str) -> tuple[int, os.stat_result] | None:
    try:
        fd = os.open(name, _READ, dir_fd=opened.fd)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def read_small(opened: Opened, name: str, limit: int) -> str | None:
    """A small regular file of the folder, or None: never through a link, never blocking, at most ``limit``."""
    found = _open_file(opened, name)
    if found is None:
        return None
    fd, _ = found
    try:
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > limit else data.decode("utf-8", "replace")


def secret(opened: Opened) -> str | None:
    """The submission's secret (nbgrader's ``submission_secret.txt``), or None when it is missing or malformed."""
    text = read_small(opened, "submission_secret.txt", MAX_SECRET_CHARS)
    text = text.strip() if text else ""
    return text if _HEX.fullmatch(text) else None


def copy_notebook(opened: Opened, notebook: str, timestamp: str, dest: Path, limit: int) -> bool:
    """Copy the one notebook the assignment has into ``dest`` (a ``submitted/{student}/{assignment}`` folder), with
    the timestamp; False when there is no usable notebook: a regular file with one link (a hard link could name
    another account's file), owned by the folder's owner, of at most ``limit`` bytes. Nothing else is copied."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "timestamp.txt").write_text(timestamp, encoding="utf-8")
    found = _open_file(opened, notebook)
    if found is None:
        return False
    fd, info = found
    try:
        if info.st_nlink != 1 or info.st_uid != opened.uid or info.st_size > limit:
            return False
        copied, left = False, limit + 1
        with open(dest / notebook, "wb") as out:
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                out.write(chunk)
                left -= len(chunk)
            copied = left > 0
        if not copied:
            os.unlink(dest / notebook)  # grew past the limit while being read
        return copied
    except OSError:
        return False
    finally:
        os.close(fd)


def feedback_name(submission_secret: str, notebook_id: str) -> str:
    """The file name nbgrader's fetch_feedback looks for (``nbgrader.utils.notebook_hash`` with a secret)."""
    digest = hashlib.md5()
    digest.update(submission_secret.encode("utf-8"))
    digest.update(notebook_id.encode("utf-8"))
    return digest.hexdigest() + ".html"


def release(exchange: Path, course_id: str, submission_secret: str, notebook_id: str, html: str) -> Path:
    """Put a feedback page where the learner's Fetch Feedback finds it, atomically (a new file, then a rename), all
    relative to the feedback folder opened without following a link."""
    folder = course_dir(exchange, course_id) / "feedback"
    _own_folder(folder)
    target = feedback_name(submission_secret, notebook_id)
    temporary = f".{target}.{secrets.token_hex(8)}.tmp"
    dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dirfd)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(html)
            os.fchmod(out.fileno(), 0o644)
        os.replace(temporary, target, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    finally:
        os.close(dirfd)
    return folder / target
