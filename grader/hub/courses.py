"""More than one course on one hub: ``python -m grader hub --course ID:ROSTER:GRADERS`` (repeatable).

The hub's own course is the one it always ran (``install.COURSE_ID``, the course root ``/srv/jax-course/course``, the
groups ``jdt-learners``, ``jdt-graders`` and ``jdt-instructors``, the service ``grading`` on ``--service-port``). Each
``--course`` adds one more, with nothing shared but the hub, the learners' environment and the exchange's root:

* its **course id** ``ID`` (nbgrader's ``CourseDirectory.course_id``) and **root** ``/srv/jax-course/courses/ID``
  (sources, ``gradebook.db``, the grading output), the instructor's (the first of ``GRADERS``), group
  ``jdt-ID-graders``, mode 2770;
* its **groups**: ``jdt-ID-learners`` (who may fetch, submit, and ask its service; shut out of the checkout by an ACL
  entry of its own, as ``jdt-learners`` is) and ``jdt-ID-graders`` (its root, its formgrader, its exchange folder);
* its **exchange folder** ``EXCHANGE/ID`` (root's, group ``jdt-ID-graders``, mode 2770, and an ACL entry that lets
  ``jdt-ID-learners`` in): nobody else enters it, so a learner of another course can neither submit into it nor
  fetch from it, and another course's grader cannot list its submissions. The hub's own course's folder is closed
  the same way (to ``jdt-graders`` and ``jdt-learners``) as soon as there is a second course;
* its **grading service** ``grading-ID`` on the next port after the previous course's (``--service-port`` + 1, + 2,
  ...), serving members of its two groups only (``serve --members``): anyone else is answered 403.

With more than one course, a learner's fetched notebooks lie under ``~/COURSE/ASSIGNMENT/`` (nbgrader's
``path_includes_course``), Validate asks the service of the course the notebook lies under
(``COURSE_GRADING_URLS``), and no course's staff is the hub's admin (an admin may open every server on the hub).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.hub import accounts

ID = re.compile(r"[a-z][a-z0-9-]{1,17}[a-z0-9]")  # jdt-ID-learners stays within a group name's 32 characters
ACCOUNT = re.compile(r"[a-z][a-z0-9_-]{0,31}")
URLS_VARIABLE = "COURSE_GRADING_URLS"  # a learner's server: {course id: its grading service's URL}, JSON


class CourseRefused(ValueError):
    """A ``--course`` the hub cannot set up; the message names the fix."""


@dataclass(frozen=True)
class Course:
    id: str
    root: Path
    learners: str  # Unix group: fetches, submits, asks its service
    graders: str  # Unix group: its root, formgrader, inbound
    instructor: str  # the account owning its root
    service: str  # its grading service's name on the hub
    port: int
    roster: Path | None = None
    staff: tuple[str, ...] = ()

    def settings(self) -> dict:
        return {"id": self.id, "root": str(self.root), "learners": self.learners, "graders": self.graders,
                "instructor": self.instructor, "service": self.service, "port": self.port}


def groups(course_id: str) -> tuple[str, str]:
    """A further course's learners' and graders' groups."""
    return f"jdt-{course_id}-learners", f"jdt-{course_id}-graders"


def first(course_id: str, root: Path, port: int) -> Course:
    """The hub's own course, as it always was."""
    return Course(course_id, root, accounts.LEARNERS, accounts.GRADERS, accounts.INSTRUCTOR, "grading", port,
                  staff=(accounts.INSTRUCTOR,))


def parse(spec: str) -> tuple[str, Path, tuple[str, ...]]:
    """``ID:ROSTER:GRADER[,GRADER...]`` as (id, roster, graders); raises CourseRefused saying what is wrong."""
    parts = spec.split(":")
    if len(parts) != 3 or not all(parts):
        raise CourseRefused(f"--course {spec!r}: give ID:ROSTER:GRADERS (a course id, its roster file, its graders' "
                            "accounts separated by commas, the first its instructor)")
    course_id, roster, staff = parts[0], Path(parts[1]), tuple(name.strip() for name in parts[2].split(","))
    if not ID.fullmatch(course_id):
        raise CourseRefused(f"--course: {course_id!r} is not a course id this hub takes (a letter, then 2 to 19 "
                            "lower-case letters, digits or -, not ending in -)")
    for name in staff:
        if not ACCOUNT.fullmatch(name):
            raise CourseRefused(f"--course {course_id}: {name!r} is not an account name")
    if not roster.is_file():
        raise CourseRefused(f"--course {course_id}: the roster {roster} is not a file")
    return course_id, roster.resolve(), staff


def others(specs: list[str], hub: Course, srv: Path) -> list[Course]:
    """The courses of ``--course`` options, after the hub's own (``hub``): roots under ``SRV/courses``, services on
    the ports after its port."""
    found: list[Course] = []
    for number, spec in enumerate(specs, start=1):
        course_id, roster, staff = parse(spec)
        if course_id in {hub.id, *(c.id for c in found)}:
            raise CourseRefused(f"--course {course_id}: that course id is taken on this hub")
        learners, graders = groups(course_id)
        found.append(Course(course_id, srv / "courses" / course_id, learners, graders, staff[0],
                            f"grading-{course_id}", hub.port + number, roster, staff))
    return found


def staff_accounts(courses: list[Course]) -> list[accounts.Account]:
    """Each further course's graders: accounts of their own (a demo password, as the hub's instructor has), in the
    course's graders' group only."""
    return [accounts.Account(name, (course.graders,)) for course in courses for name in course.staff]


def learners(course: Course, demo: bool, course_csv: Path) -> tuple[list[str], list[accounts.Account], list[str]]:
    """A further course's roster: its learners, the accounts to make with demo passwords (``demo``: the hub runs the
    demo class), and the roster's refusals ("line N: why"); ``course_csv``: its learners written as nbgrader's
    student table, for its gradebook. Read as ``--roster`` reads a file (``grader.hub.roster``): an account of the
    machine that is neither a learner of the hub's course nor of this one is refused."""
    from grader.hub import roster as rosters

    try:
        read = rosters.read(course.roster, accounts.members(course.learners))
    except rosters.RosterRefused as error:
        raise CourseRefused(f"--course {course.id}: {error}") from None
    names = [e.account for e in read.enrolled]
    if not names:
        raise CourseRefused(f"--course {course.id}: {course.roster} enrols no learner this machine can make")
    rosters.write_course_csv(read, course_csv)
    made = [accounts.Account(name, (course.learners,)) for name in names] if demo else []
    return names, made, [f"line {line}: {why}" for line, why in read.refused]


def join(course: Course, names: list[str]) -> None:
    """Put a further course's learners in its learners' group; an account that does not exist yet is made locked
    (the site's login, or ``passwd``, opens it: no course password), as ``--roster`` makes one."""
    import os
    import pwd

    accounts.ensure_groups([course.learners, course.graders])
    wanted = course.learners
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            accounts._run("useradd", "--create-home", "--shell", "/bin/bash", "--groups", wanted, name)
        else:
            accounts._run("usermod", "--append", "--groups", wanted, name)
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)


def learner_exchange_config(courses: list[Course]) -> str:
    """The learners' nbgrader settings that follow from the courses: one course, its id (as the hub always set it);
    more, every course the learner may enter listed and fetched under ``~/COURSE/``."""
    if len(courses) == 1:
        return f"c.CourseDirectory.course_id = {courses[0].id!r}\n"
    return "c.Exchange.path_includes_course = True  # several courses: each one's notebooks under ~/COURSE/\n"
