"""A real class's roster: read as the LMS exports it, applied to the machine's accounts again whenever it changes.

``python -m grader hub --roster FILE`` (and ``python -m grader roster FILE`` for a class already running) reads

* **Canvas**'s Gradebook export (``Student, ID, SIS User ID, SIS Login ID, Section, ...``; its ``Points Possible``
  row and Canvas's ``Test Student`` are skipped): the account is the ``SIS Login ID``, the LMS id Canvas's ``ID``;
* **Moodle**'s participants or grades export (``First name, Last name, ID number, Email address``, and ``Username``
  where the export has it): the account is the ``Username``, else the e-mail's local part; the LMS id ``ID number``;
* the course's own CSV, nbgrader's student table (``id, first_name, last_name, email, lms_user_id``).

Every row is data: a name or e-mail is kept as text (nbgrader's gradebook, the class report escape it), never
markup or a command (accounts are made with argv, never a shell). An account name must be what ``useradd`` takes
on every distribution (a lower-case letter, then at most 31 lower-case letters, digits, ``_`` or ``-``); a row whose
account is not, that names an account of the machine that is not this class's (``root``, a service, a colleague),
or that two rows share, is refused with its line and reason, and no account is made for it.

Applying it again mid-term changes nothing of anyone's work: a new learner gets an account; a learner no longer on
the roster is deactivated (out of the learners' group, which the hub admits, and the account expired, so no login
of any kind works; a learner of another course on the same hub, ``grader.hub.courses``, keeps a login for it), their
home, submissions and grades kept; a learner back on the roster is active again. What
the roster made is remembered in the hub's state folder (``roster.json``, root's), so only the class's own accounts
are ever deactivated. No real learner gets a password from the course: they log in with the site's own logins (the
PAM stack of the hub's machine: the university's directory) or through the LMS (LTI); on a machine with neither, the
administrator sets one (``passwd NAME``). Only the demo roster (``samples/roster.csv``) gets demo passwords.
"""
from __future__ import annotations

import csv
import datetime
import grp
import json
import os
import pwd
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.hub import accounts

ACCOUNT = re.compile(r"[a-z][a-z0-9_-]{0,31}")
CANVAS = ("Student", "ID", "SIS Login ID")
MOODLE = ("First name", "Last name", "Email address")
COURSE = ("id",)


@dataclass(frozen=True)
class Enrolment:
    account: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""


@dataclass
class Roster:
    format: str
    enrolled: list[Enrolment] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line, why)


class RosterRefused(ValueError):
    """A roster file that cannot be read at all (not a CSV of a known export), with what was expected."""


def _clean(text: str | None) -> str:
    """A cell as data: stripped, control characters dropped, at most 200 characters."""
    return "".join(ch for ch in (text or "").strip() if ch.isprintable())[:200]


def _format(header: list[str]) -> str:
    names = set(header)
    for name, needed in (("canvas", CANVAS), ("moodle", MOODLE), ("course", COURSE)):
        if set(needed) <= names:
            return name
    raise RosterRefused(f"the roster's first line ({', '.join(header[:6]) or 'empty'}) is not Canvas's Gradebook "
                        f"export ({', '.join(CANVAS)}, ...), Moodle's participants export ({', '.join(MOODLE)}, ...) "
                        "nor the course's CSV (id, first_name, last_name, email, lms_user_id)")


def _row(kind: str, row: dict) -> tuple[str, Enrolment] | None:
    """(the account as written, the enrolment) of one row; None for a row that is no learner's."""
    get = lambda key: _clean(row.get(key))  # noqa: E731 - a short local reader
    if kind == "canvas":
        student = get("Student")
        if not student or "Points Possible" in student or student in ("Test Student", "Student, Test") or not get("ID"):
            return None
        last, _, first = student.partition(",") if "," in student else ("", "", student)
        written = get("SIS Login ID")
        return written, Enrolment("", first.strip() or student, last.strip(), "", get("ID"))
    if kind == "moodle":
        email = get("Email address")
        written = get("Username") or email.partition("@")[0]
        return written, Enrolment("", get("First name"), get("Last name"), email, get("ID number"))
    return get("id"), Enrolment("", get("first_name"), get("last_name"), get("email"), get("lms_user_id"))


def read(path: Path, ours: set[str] = frozenset()) -> Roster:
    """The roster in ``path``; ``ours``: accounts this class already made (an existing account is refused unless it
    is one of them or a member of the learners' group)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            lines = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise RosterRefused(f"{path} cannot be read as a CSV file ({error})") from None
    if not lines:
        raise RosterRefused(f"{path} is empty")
    header = [_clean(h) for h in lines[0]]
    roster = Roster(_format(header))
    learners = accounts.members(accounts.LEARNERS) | set(ours)
    seen: dict[str, int] = {}
    for number, cells in enumerate(lines[1:], start=2):
        found = _row(roster.format, dict(zip(header, cells)))
        if found is None:
            continue
        written, enrolment = found
        name = written.lower()
        if not ACCOUNT.fullmatch(name):
            roster.refused.append((number, f"{written!r} is not an account name this machine can make (a letter, then "
                                           "at most 31 letters, digits, _ or -): no account made"))
            continue
        if name in seen:
            roster.refused.append((number, f"{name!r} is on line {seen[name]} too: neither line's learner is "
                                           "enrolled twice; correct the roster"))
            continue
        try:
            pwd.getpwnam(name)
            foreign = name not in learners
        except KeyError:
            foreign = False
        if foreign:
            roster.refused.append((number, f"{name!r} is an account of this machine that is not one of this class's "
                                           "learners: no learner is given it"))
            continue
        seen[name] = number
        roster.enrolled.append(Enrolment(name, enrolment.first_name, enrolment.last_name, enrolment.email,
                                         enrolment.lms_user_id))
    return roster


@dataclass
class Applied:
    added: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{len(names)} {what}" + (f" ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names
                                           else "")
                 for what, names in (("added", self.added), ("back on the roster", self.reactivated),
                                     ("unchanged", self.kept), ("deactivated (work and grades kept)", self.deactivated))]
        return "roster: " + "; ".join(parts)


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")


def load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def apply(roster: Roster, state: Path) -> Applied:
    """Make the machine's accounts follow ``roster`` (module docstring); remember them in ``state``."""
    known = load_state(state)
    applied = Applied()
    accounts.ensure_groups([accounts.LEARNERS])
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    wanted = {e.account: e for e in roster.enrolled}
    for name, enrolment in wanted.items():
        try:
            pwd.getpwnam(name)
        except KeyError:  # no password: useradd leaves it locked
            _run("useradd", "--create-home", "--shell", "/bin/bash", "--groups", accounts.LEARNERS, name)
            applied.added.append(name)
        else:
            if known.get(name, {}).get("active") is False:
                applied.reactivated.append(name)
            else:
                applied.kept.append(name)
            _run("usermod", "--append", "--groups", accounts.LEARNERS, "--expiredate", "", name)
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
        known[name] = {**asdict(enrolment), "active": True, "since": known.get(name, {}).get("since", now)}
    for name, entry in sorted(known.items()):
        if name in wanted or entry.get("active") is False:
            continue
        try:
            pwd.getpwnam(name)
        except KeyError:
            known[name] = {**entry, "active": False, "until": now}
            continue
        if name in accounts.members(accounts.LEARNERS):
            _run("gpasswd", "--delete", name, accounts.LEARNERS)
        if not learner_elsewhere(name):  # (a learner of another course on the hub still logs in for that one)
            _run("usermod", "--expiredate", "1", name)  # expired: PAM refuses every login; files untouched
        known[name] = {**entry, "active": False, "until": now}
        applied.deactivated.append(name)
    state.parent.mkdir(parents=True, exist_ok=True)
    temporary = state.with_name(f".{state.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(known, out, indent=1, sort_keys=True)
    os.replace(temporary, state)
    return applied


def learner_elsewhere(name: str) -> bool:
    """Whether ``name`` learns in a further course of the hub (a ``jdt-ID-learners`` group: ``grader.hub.courses``)."""
    return any(g.gr_name.startswith("jdt-") and g.gr_name.endswith("-learners") and g.gr_name != accounts.LEARNERS
               and name in accounts.members(g.gr_name) for g in grp.getgrall())


def write_course_csv(roster: Roster, target: Path) -> None:
    """The active learners as nbgrader's student table (what ``nbgrader db student import`` reads)."""
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "first_name", "last_name", "email", "lms_user_id"])
        for e in roster.enrolled:
            writer.writerow([e.account, e.first_name, e.last_name, e.email, e.lms_user_id])
