"""Whom a course's grading service answers: with ``serve --members GROUP,...`` (a hub of several courses gives each
course's service its learners' and graders' groups), only accounts in one of those Unix groups, as a supplementary or
their primary group. Anyone else (a learner or grader of another course on the same hub) is answered 403 on every
route that acts for an account, Validate included, and nothing is recorded for them."""
from __future__ import annotations

import grp
import os
import pwd

NOT_ENROLLED = ("you are not enrolled in this course: its grading service answers its own learners and graders only "
                "(ask the service of your course)")


def member(uid: int, groups: tuple[str, ...]) -> bool:
    """Whether the account ``uid`` is in one of ``groups`` now (read from the machine at each request: a learner
    dropped from the course is refused from then on)."""
    try:
        account = pwd.getpwuid(uid)
        mine = set(os.getgrouplist(account.pw_name, account.pw_gid))
    except (KeyError, OSError):
        return False
    for name in groups:
        try:
            if grp.getgrnam(name).gr_gid in mine:
                return True
        except KeyError:
            continue
    return False
