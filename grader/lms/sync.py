"""``sync_once``: post every pending grade to the LMS, newest only, each post a line of the grade's history.

Called by ``python -m grader lms sync`` and, between submissions, by the grading service (``sync_due``: it waits
out the back-off and never blocks on another sync). Each round:

1. the grades the history stands for (``outbox.grades``), each with the LMS user id of its learner; a learner without
   one is left pending ("no LMS user id"), never posted under a guess;
2. for each pending one, its assignment's line item (found by ``resourceId`` and ``tag``, made when missing) and one
   score POST; success appends ``lms_post`` (what was posted, the line item, the HTTP status) to the history;
3. a failure that passes (``ags.Unreachable``) stops the round when it is the LMS's (no connection, its token
   endpoint) or backs that post off alone (5xx, 429); a refusal (``ags.Refused``) is an ``lms_post`` line with
   ``outcome`` ``refused`` and the platform's message.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.lms import ags, outbox
from grader.lms.config import LmsConfig, lms_users
from grader.term import history


@dataclass
class Round:
    posted: list[str] = field(default_factory=list)  # "student/assignment: 12.5/20 FullyGraded"
    refused: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)  # left for a later round, with why
    backed_off: list[str] = field(default_factory=list)  # keys of the posts that failed alone this round
    skipped: bool = False  # another sync held the lock, or the LMS's back-off had not run out


def score(grade: outbox.Grade, user_id: str, config: LmsConfig) -> dict:
    """The AGS score message for ``grade``."""
    link = config.feedback_link(grade.student, grade.assignment)
    comment = f"{grade.parts}" + ("" if grade.progress == "FullyGraded" else "; the hand-graded part is still to grade")
    return {"userId": user_id, "scoreGiven": grade.given, "scoreMaximum": grade.maximum,
            "activityProgress": grade.activity, "gradingProgress": grade.progress, "timestamp": grade.timestamp,
            "comment": comment + (f". Feedback: {link}" if link else "")}


def _label(grade: outbox.Grade) -> str:
    return f"{grade.student}/{grade.assignment}: {history.shown(grade.given)}/{history.shown(grade.maximum)} " \
           f"{grade.progress}"


def sync_once(out: Path, config: LmsConfig, db_url: str | None = None, *, now: float | None = None,
              force: bool = False, retry: bool = False, wait: bool = True, client=None) -> Round:
    """One round of posting (see the module's docstring). ``force``: try now whatever the back-off says (an
    instructor asked); ``retry``: post again grades the LMS refused; ``wait``: wait for another sync to end, else skip.
    Raises ``config.ConfigError`` on a users file that cannot be read, ``keys.KeyProblem`` on an open key."""
    done = Round()
    with outbox.locked(out, wait) as held:
        if not held:
            done.skipped = True
            return done
        now = time.time() if now is None else now
        state = outbox.load_state(out)
        platform = state.get("platform")
        if platform and now < platform.get("next_try", 0) and not force:
            done.skipped = True
            return done
        users = lms_users(config, db_url)
        todo = []
        for grade in outbox.grades(out):
            why = outbox.why_pending(grade, users, {"posts": {}}, now)
            if why is None:
                state["posts"].pop(grade.key, None)
            elif why == "not posted yet" or (retry and grade.refused):
                entry = state["posts"].get(grade.key)
                if entry and now < entry.get("next_try", 0) and not force:
                    done.deferred.append(f"{_label(grade)}: backing off ({entry.get('last_error')})")
                else:
                    todo.append(grade)
            else:
                done.deferred.append(f"{_label(grade)}: {why}")
        if not todo:  # nothing the LMS could take: no failure of it is current
            state.pop("platform", None)
            outbox.save_state(out, state)
            return done
        try:
            client = client or ags.Client(config)
            for grade in todo:
                _post_one(out, config, client, grade, users[grade.student], state, now, done)
            state.pop("platform", None)
        except ags.Unreachable as error:  # the LMS as a whole: every grade still to post waits for the next round
            state["platform"] = outbox.failed(state.get("platform"), str(error), now, error.retry_after)
            done.deferred += [f"{_label(g)}: {error}" for g in todo[len(done.posted) + len(done.refused)
                                                                       + len(done.backed_off):]]
        finally:
            outbox.save_state(out, state)
    return done


def _post_one(out: Path, config: LmsConfig, client, grade: outbox.Grade, user_id: str, state: dict, now: float,
              done: Round) -> None:
    """Post one grade; raises ``ags.Unreachable`` when the LMS as a whole is (the round stops)."""
    message = score(grade, user_id, config)
    lineitem = state["lineitems"].get(grade.assignment)
    try:
        for attempt in (0, 1):
            if not lineitem:
                lineitem = client.lineitem(grade.assignment, grade.maximum)
                state["lineitems"][grade.assignment] = lineitem
            try:
                status = client.post(lineitem, message)
                break
            except ags.Refused as refused:
                if refused.status in (404, 410) and attempt == 0:  # the line item was deleted in the LMS: find again
                    state["lineitems"].pop(grade.assignment, None)
                    lineitem = None
                    continue
                raise
    except ags.Refused as refused:
        history.append(out, grade.student, grade.assignment, "lms_post",
                       f"the LMS refused the grade (HTTP {refused.status}): {refused.message}", outcome="refused",
                       grade=grade.wanted(), score=message, lineitem=lineitem, status=refused.status,
                       message=refused.message)
        state["posts"].pop(grade.key, None)
        done.refused.append(f"{_label(grade)}: HTTP {refused.status} {refused.message}")
        return
    except ags.Unreachable as error:
        if error.whole:
            raise  # no connection, or the tool's credentials: nothing else will get through either
        state["posts"][grade.key] = outbox.failed(state["posts"].get(grade.key), str(error), now, error.retry_after)
        done.deferred.append(f"{_label(grade)}: {error}")
        done.backed_off.append(grade.key)
        return
    history.append(out, grade.student, grade.assignment, "lms_post",
                   f"posted to the LMS: {history.shown(grade.given)}/{history.shown(grade.maximum)} "
                   f"{grade.progress} (HTTP {status})", outcome="posted", grade=grade.wanted(), score=message,
                   lineitem=lineitem, status=status)
    state["posts"].pop(grade.key, None)
    done.posted.append(_label(grade))


def sync_due(out: Path, config: LmsConfig, db_url: str | None = None) -> Round:
    """For the grading service's loop: a round when the back-off allows, skipped while another sync runs."""
    return sync_once(out, config, db_url, wait=False)
