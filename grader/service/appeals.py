"""Regrade requests (appeals): a learner asks for one test of their counting attempt to be looked at again, with a
reason; the instructor answers each one.

* **Asking** goes through the grading service's loopback port (``POST /appeal``, ``python -m grader appeal``): the
  service tells who asks from the connection itself (``identity``: the account at the other end as it was accepted,
  or the hub's word on the token the learner's server sends), as it tells whose a submission is from the folder's
  owner, so nobody can ask, or read answers, in another learner's name; a request whose account cannot be told is
  refused, never recorded in root's or anyone's name.
* **The request** names a test of the learner's counting result (nothing else can be appealed), with a reason of at
  most ``MAX_REASON`` characters, kept as data: JSON on disk, escaped on every page, and on every terminal and
  history line one line, quoted and marked as the learner's (``identifiers.learner_text``), so it cannot pass for a
  line of the record. It records the test's points and message as graded, so the instructor sees what the learner saw.
* **The limit**: ``PER_ASSIGNMENT`` requests per learner and assignment, one open request per test. It bounds the
  instructor's work, not an oracle: a request runs no code and grades nothing; its answer is written by a person
  about an attempt already graded, so asking reveals nothing a Submit would not.
* **Answers** (``python -m grader appeals answer``): ``kept``, ``changed`` (the test's points set by hand on the
  counting attempt, in ``results/`` and nbgrader's gradebook, so every total follows; a later counting attempt is
  graded afresh), or ``fixed`` (the test itself was wrong and has been corrected; the learners it affects are graded
  again by the instructor). The service releases each answer with the learner's feedback page, where their next
  Fetch Feedback finds it.

One JSON-lines file per learner, ``{out}/appeals/{student}.jsonl``: requests, answers and deliveries are appended,
never rewritten; the history of the grade gets the same events.
"""
from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.term.gradebook import Gradebook, path_part
from grader.submission.pipeline import notebook_name

FOLDER = "appeals"
MAX_REASON = 2000  # characters
PER_ASSIGNMENT = 3  # requests per learner and assignment
ANSWERS = ("kept", "changed", "fixed")


class Refused(ValueError):
    """A request that cannot be taken, with the sentence the learner reads."""


@dataclass
class Appeal:
    id: str
    student: str
    assignment: str
    test: str
    reason: str
    at: str
    points: float  # as graded, when asked
    max_points: float
    message: str  # the test's message, as graded
    answer: str = ""  # one of ANSWERS, once answered
    answer_note: str = ""
    answered_by: str = ""
    answered_at: str = ""
    new_points: float | None = None
    delivered: bool = False


def clean(text: str, limit: int) -> str:
    """A reason or note as stored: at most ``limit`` characters, control characters other than newline and tab
    dropped (terminal escape sequences cannot reach the instructor's terminal), trailing space trimmed."""
    kept = "".join(c for c in text[:limit] if c in "\n\t" or c.isprintable())
    return kept.strip()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Appeals:
    def __init__(self, out: Path):
        self.out = out
        self.folder = out / FOLDER

    def _path(self, student: str) -> Path:
        return self.folder / f"{path_part(student)}.jsonl"

    def _append(self, student: str, row: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path(student), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o660)
        try:
            os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def of(self, student: str) -> list[Appeal]:
        """The learner's requests, each with its answer and delivery folded in, oldest first."""
        try:
            lines = self._path(student).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        found: dict[str, Appeal] = {}
        for line in lines:
            try:
                row = json.loads(line)
                kind = row.pop("kind")
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            if kind == "request":
                try:
                    found[row["id"]] = Appeal(**row)
                except TypeError:
                    continue
            elif kind == "answer" and row.get("id") in found:
                appeal = found[row["id"]]
                appeal.answer, appeal.answer_note = row.get("answer", ""), row.get("note", "")
                appeal.answered_by, appeal.answered_at = row.get("by", ""), row.get("at", "")
                appeal.new_points, appeal.delivered = row.get("points"), False
            elif kind == "delivered" and row.get("id") in found:
                found[row["id"]].delivered = True
        return list(found.values())

    def everyone(self) -> list[Appeal]:
        appeals = []
        for path in sorted(self.folder.glob("*.jsonl")):
            try:
                first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
            except (OSError, ValueError, IndexError):
                continue
            appeals += self.of(first.get("student", ""))
        return sorted(appeals, key=lambda a: a.at)

    def ask(self, student: str, assignment: str, test: str, reason: str) -> Appeal:
        """Take a learner's request, or raise ``Refused`` saying why."""
        reason = clean(str(reason), MAX_REASON)
        if not reason:
            raise Refused("say why you think the test is wrong: the reason is empty")
        result = Gradebook(self.out).stored(student, assignment, notebook_name(assignment))
        if result is None or result.reported_score is None:
            raise Refused(f"you have no graded attempt of {assignment!r} that counts yet, so there is nothing to "
                          "look at again")
        tests = {t.grade_id: t for t in result.tests}
        if test not in tests:
            raise Refused(f"{assignment!r} has no test {test!r} in your graded attempt; its tests are "
                          + ", ".join(sorted(tests)))
        mine = [a for a in self.of(student) if a.assignment == assignment]
        if any(a.test == test and not a.answer for a in mine):
            raise Refused(f"your request about {test} is still open; its answer comes with your feedback")
        if len(mine) >= PER_ASSIGNMENT:
            raise Refused(f"you have made {len(mine)} regrade requests for {assignment}, the most the course takes; "
                          "ask your instructor directly")
        graded = tests[test]
        appeal = Appeal(secrets.token_hex(6), student, assignment, test, reason, _now(), graded.points,
                        graded.max_points, graded.message[:1000])
        self._append(student, {"kind": "request", **asdict(appeal)})
        return appeal

    def find(self, appeal_id: str) -> Appeal | None:
        return next((a for a in self.everyone() if a.id == appeal_id), None)

    def answer(self, appeal: Appeal, answer: str, note: str, by: str, points: float | None = None) -> Appeal:
        if answer not in ANSWERS:
            raise ValueError(f"an answer is one of {', '.join(ANSWERS)}, not {answer!r}")
        if answer == "changed" and (points is None or not 0 <= points <= appeal.max_points):
            raise ValueError(f"changed needs the test's new points, from 0 to {appeal.max_points:g}")
        row = {"kind": "answer", "id": appeal.id, "answer": answer, "note": clean(note, MAX_REASON), "by": by,
               "at": _now(), "points": points if answer == "changed" else None}
        self._append(appeal.student, row)
        appeal.answer, appeal.answer_note, appeal.answered_by, appeal.answered_at = answer, row["note"], by, row["at"]
        appeal.new_points, appeal.delivered = row["points"], False
        return appeal

    def delivered(self, appeal: Appeal) -> None:
        self._append(appeal.student, {"kind": "delivered", "id": appeal.id, "at": _now()})


def said(appeal: Appeal) -> str:
    """The answer, as the learner reads it."""
    head = f"Your regrade request about {appeal.test} ({appeal.at}): "
    if appeal.answer == "kept":
        body = f"the test's {appeal.points:g} / {appeal.max_points:g} points stay."
    elif appeal.answer == "changed":
        body = (f"changed by your instructor from {appeal.points:g} to {appeal.new_points:g} / "
                f"{appeal.max_points:g} points.")
    elif appeal.answer == "fixed":
        body = "the test was wrong and has been fixed; your attempt is graded again with the fixed test."
    else:
        body = "not answered yet."
    return head + body + (f" Your instructor's note: {appeal.answer_note}" if appeal.answer_note else "")


# -- the service's side: requests over the loopback port, answers released with the feedback -------------------------

MAX_BODY = 16 * 1024


def request(out: Path, uid: int | None, body: bytes) -> tuple[int, dict]:
    """``POST /appeal``: ``{"assignment", "test", "reason"}`` from the account at the other end of the connection."""
    from grader.service.exchange import owner
    from grader.term import history

    if uid is None:
        return 403, {"error": "the grading service cannot tell which account is asking; ask from your own server"}
    if len(body) > MAX_BODY:
        return 413, {"error": f"a request is at most {MAX_BODY} bytes"}
    try:
        data = json.loads(body)
        assignment, test, reason = (str(data[k]) for k in ("assignment", "test", "reason"))
    except (ValueError, KeyError, TypeError):
        return 400, {"error": "a request is JSON with assignment, test and reason"}
    student = owner(uid)
    try:
        appeal = Appeals(out).ask(student, assignment, test, reason)
    except Refused as refused:
        return 409, {"error": str(refused)}
    history.append(out, student, assignment, "appeal", "regrade request", reason=appeal.reason, id=appeal.id,
                   test=test, points=appeal.points)
    return 200, {"id": appeal.id, "said": f"Your request about {test} is recorded ({appeal.id}); its answer comes "
                                          "with your feedback (Fetch Feedback), or: python -m grader appeal --list"}


def mine(out: Path, uid: int | None) -> tuple[int, dict]:
    """``GET /appeals``: the asking account's own requests and answers."""
    from grader.service.exchange import owner

    if uid is None:
        return 403, {"error": "the grading service cannot tell which account is asking"}
    return 200, {"appeals": [{"id": a.id, "assignment": a.assignment, "test": a.test, "at": a.at, "said": said(a)}
                             for a in Appeals(out).of(owner(uid))]}


def apply_change(out: Path, db_url: str | None, course_root: Path, appeal: Appeal) -> None:
    """An answer ``changed``: the test's points set by hand on the counting attempt's result (and nbgrader's
    gradebook, where formgrader shows them), then every table and page refreshed."""
    from grader.nbgrader_adapter.manual_grades import refresh

    notebook = notebook_name(appeal.assignment)
    book = Gradebook(out)
    graded = book.stored(appeal.student, appeal.assignment, notebook)
    was = next((t for t in (graded.tests if graded else []) if t.grade_id == appeal.test), None)
    book.replace_test(appeal.student, appeal.assignment, notebook, appeal.test, {
        "points": appeal.new_points, "passed": appeal.new_points >= appeal.max_points,
        "message": f"Changed by your instructor on your regrade request: {appeal.answer_note or ''} "
                   f"(graded {appeal.points:g} first). " + (was.message if was else "")})
    if db_url:
        from grader.nbgrader_adapter.db import set_auto_score

        set_auto_score(db_url, appeal.student, appeal.assignment, notebook, appeal.test, appeal.new_points)
    refresh(out, db_url, course_root)


def deliver(out: Path, exchange_root: Path, course_id: str) -> int:
    """Release every answered, undelivered request with the learner's feedback page (under the counting attempt's
    secret, where Fetch Feedback looks); returns how many."""
    from grader.service import exchange, pages
    from grader.term import history

    store, released = Appeals(out), 0
    for appeal in store.everyone():
        if not appeal.answer or appeal.delivered:
            continue
        book = Gradebook(out)
        notebook = notebook_name(appeal.assignment)
        feedback = book.feedback_path(appeal.student, appeal.assignment, notebook)
        try:
            secret = (feedback.parent / "submission_secret.txt").read_text(encoding="utf-8").strip()
            text = feedback.read_text(encoding="utf-8")
        except OSError:
            continue  # no released attempt to answer beside (yet)
        exchange.release(exchange_root, course_id, secret, Path(notebook).stem, pages.with_banner(text, [said(appeal)]))
        store.delivered(appeal)
        history.append(out, appeal.student, appeal.assignment, "appeal", "the answer released with the feedback",
                       id=appeal.id, test=appeal.test, answer=appeal.answer)
        released += 1
    return released


# -- the two commands: the learner's ``appeal`` and the instructor's ``appeals`` --------------------------------------

def ask_command(url: str, assignment: str | None, test: str | None, reason: str | None) -> int:
    """``python -m grader appeal ASSIGNMENT TEST --reason TEXT`` (or ``--list``, all three None), from the learner's
    own account: the service records it in that account's name (the same request as the learner's page,
    ``grader.learner.regrade``)."""
    import sys

    from grader.learner.regrade import send

    try:
        status, answer = send(url, assignment, test, reason)
    except (OSError, ValueError) as error:
        print(f"appeal: the grading service does not answer at {url} ({error}); is it running?",
              file=sys.stderr)
        return 2
    if status != 200:
        print(f"appeal: not recorded: {answer.get('error', status)}", file=sys.stderr)
        return 1
    if assignment is None:
        for item in answer.get("appeals", []):
            print(f"{item['id']}  {item['assignment']}  {item['said']}")
        print(f"{len(answer.get('appeals', []))} regrade request(s)")
    else:
        print(answer.get("said", "recorded"))
    return 0


def instructor_command(out: Path, db_url: str | None, course_root: Path, appeal_id: str | None, answer: str | None,
                       points: float | None, note: str) -> int:
    """``python -m grader appeals``: the open requests (``--all``: every one), or with ``answer ID kept|changed|fixed``
    the answer, kept for the service to release with the learner's feedback."""
    import getpass
    import sys

    from grader.identifiers import escape_controls, learner_text
    from grader.term import history

    store = Appeals(out)
    if appeal_id is None:
        shown = [a for a in store.everyone() if answer == "all" or not a.answer]
        for a in shown:
            autograded = Gradebook(out).autograded_path(a.student, a.assignment, notebook_name(a.assignment))
            # each line one line: the learner's reason quoted and marked, the test's message (it may quote the
            # learner's values) escaped, so no text of theirs can begin a line of this listing
            print(f"{escape_controls(f'{a.id}  {a.student}  {a.assignment}  {a.test}')}  {a.points:g}/"
                  f"{a.max_points:g}  asked {escape_controls(a.at)}"
                  + (f"  answered {escape_controls(a.answer)} by {escape_controls(a.answered_by)}" if a.answer else "")
                  + f"\n    the test said: {escape_controls(a.message)}"
                  f"\n    the reason: {learner_text(a.reason, limit=MAX_REASON)}"
                  f"\n    their notebook, as graded: {escape_controls(str(autograded))}")
        print(f"{len(shown)} {'' if answer == 'all' else 'open '}regrade request(s)")
        return 0
    appeal = store.find(appeal_id)
    if appeal is None:
        print(f"appeals: no request {appeal_id!r} (python -m grader appeals lists them)", file=sys.stderr)
        return 2
    try:
        store.answer(appeal, answer or "", note, getpass.getuser(), points)
    except ValueError as error:
        print(f"appeals: {error}", file=sys.stderr)
        return 2
    history.append(out, appeal.student, appeal.assignment, "appeal", f"answered {answer}: {appeal.answer_note[:200]}",
                   id=appeal.id, test=appeal.test, answer=answer, points=appeal.new_points)
    if answer == "changed":
        apply_change(out, db_url, course_root, appeal)
    print(f"answered {appeal.id}: {said(appeal)}\nthe grading service releases it with the learner's feedback"
          + (f"; once the test is corrected in source/: python -m grader grade --out {out} --test {appeal.test}"
             if answer == "fixed" else ""))
    return 0


def add_commands(sub, default_port: int) -> None:
    """The ``appeal`` and ``appeals`` subcommands of ``python -m grader`` (``sub``: its subparsers)."""
    import sys
    from pathlib import Path

    from grader.layout import Course

    def cmd_appeal(args) -> int:
        if args.list == bool(args.assignment and args.test and args.reason):
            print("appeal: give ASSIGNMENT TEST --reason TEXT, or --list", file=sys.stderr)
            return 2
        from grader.learner.regrade import service_address

        try:
            url = f"http://127.0.0.1:{args.port}/" if args.port else service_address(default_port)
        except ValueError as error:
            print(f"appeal: {error}", file=sys.stderr)
            return 2
        return ask_command(url, *((None,) * 3 if args.list else (args.assignment, args.test, args.reason)))

    def cmd_appeals(args) -> int:
        from grader.nbgrader_adapter.manual_grades import default_db

        answering = args.action == "answer"
        listing = "all" if args.all else None
        return instructor_command(args.out, args.gradebook or default_db(args.out), Course.default().root,
                                  args.id if answering else None, args.answer if answering else listing,
                                  args.points, args.note)

    appeal = sub.add_parser("appeal", help="(learner) ask the grading service for a test to be looked at again")
    appeal.add_argument("assignment", nargs="?")
    appeal.add_argument("test", nargs="?", help="the test's id, as on the feedback page (test-update)")
    appeal.add_argument("--reason", help="why you think the test is wrong (at most 2,000 characters)")
    appeal.add_argument("--list", action="store_true", help="your requests and their answers")
    appeal.add_argument("--port", type=int, help="the grading service's port on this machine's loopback (default: "
                                                  "COURSE_GRADING_URL, which the hub sets, else the course's port here)")
    appeal.set_defaults(run=cmd_appeal)

    appeals = sub.add_parser("appeals", help="(instructor) the open regrade requests; answer ID kept|changed|fixed")
    appeals.add_argument("action", nargs="?", choices=["answer"])
    appeals.add_argument("id", nargs="?")
    appeals.add_argument("answer", nargs="?", choices=["kept", "changed", "fixed"])
    appeals.add_argument("--points", type=float, help="with changed: the test's new points")
    appeals.add_argument("--note", default="", help="what the learner reads with the answer")
    appeals.add_argument("--all", action="store_true", help="list answered requests too")
    appeals.add_argument("--out", type=Path, default=Path("."), help="the grading output folder (default: .)")
    appeals.add_argument("--gradebook", metavar="DB_URL", help="nbgrader database (default: OUT/gradebook.db)")
    appeals.set_defaults(run=cmd_appeals)
