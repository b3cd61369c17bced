"""``python -m grader serve``: grade each submission as it arrives and release its feedback.

The loop, in order, for every new folder in the exchange's inbound directory:

1. read it as hostile input (``exchange.arrivals``): a folder that cannot be graded is answered with a page that
   says why, and recorded;
2. decide by the attempts policy (``attempts.decide``): over the limit, the learner's page says when the next graded
   attempt is possible, and the submission is recorded, not graded;
3. copy the assignment's notebook (only it) into the attempt's own folder, ``{out}/service/attempts/{student}/
   {assignment}/{n}/``, and grade it there in a warm kernel (``pool``), with every step of a batch run;
4. release the attempt's feedback page (with a banner saying which attempt it was and which one counts) where the
   learner's "Fetch Feedback" finds it (``exchange.release``), and record the attempt in the ledger;
5. off the learner's path, publish the attempt that counts into the course's gradebook: its result, autograded
   notebook and feedback into ``{out}``, ``grades.csv``/``results.json`` rebuilt, and with ``--gradebook`` nbgrader's
   database (hand grades already entered stay).

The same process answers Validate, regrade requests, due dates and status on its port (``routes``). A folder that
could not be decided (a full disk, a vanished file) is tried again on the next scans, ``DECIDE_TRIES`` in all.
"""
from __future__ import annotations

import dataclasses
import queue
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader.layout import Course
from grader.results import NotebookResult
from grader.term import history
from grader.service import exchange, pages
from grader.term.attempts import (NOT_GRADED, UNREADABLE, Attempt, Ledger, Policy, Refusals, attempt_folder,
                                     content_digest, counting, decide)
from grader.service.pool import ClusterPool, Pool, Task
from grader.term.gradebook import Gradebook
from grader.submission import timestamps
from grader.submission.intake import MAX_NOTEBOOK_BYTES
from grader.submission.pipeline import Job, Settings, notebook_name

DEFAULT_PORT = 47080  # on loopback, or on the site's address over HTTPS (serve --host)
DECIDE_TRIES = 5  # scans a folder whose decision failed is tried in, before it is left for the instructor's collect
SUBMIT_GRACE_S = 30.0  # how long a folder without its submission_secret.txt is taken for one still being written
MAX_PER_SCAN = 100  # folders looked at per scan (four scans a second), in turns across accounts
LMS_TICK_S = 30.0  # with an LMS: how often totals changed outside the service (hand grades, appeals) are posted


@dataclass
class Options:
    exchange: Path
    course_id: str
    out: Path
    policy: Policy
    workers: int = 2
    gradebook: str | None = None  # nbgrader's database URL
    poll_s: float = 0.25
    port: int | None = DEFAULT_PORT  # None: no HTTP server
    check_owner: bool = True  # a submission counts for the student whose Unix account owns its folder
    cluster: object = None  # a Dask client, or a callable making one: grading on its workers (pool.ClusterPool)
    lms: object = None  # the LMS file (a path; grader.lms.config.load reads it): totals passed back as they change
    host: str = "127.0.0.1"  # the address ``port`` listens on: learners' servers on other hosts reach it there
    tls: object = None  # an ssl.SSLContext: the port over HTTPS (grader.service.commands.listening_tls)
    members: tuple[str, ...] = ()  # Unix groups whose accounts its routes answer (serve --members; () : anyone's)


class Service:
    def __init__(self, course: Course, options: Options, settings: Settings):
        import nbgrader.api  # noqa: F401 - before any thread does: two at once left one a half-imported module
        if isinstance(options.lms, (str, Path)):  # read once, before anything starts: a bad file stops it, saying why
            from grader.lms.config import load

            options = dataclasses.replace(options, lms=load(Path(options.lms)))
        self.course, self.options = course, options
        self.state = options.out / "service"
        self.ledger = Ledger(self.state / "ledger")
        self.refusals = Refusals(self.state / "refused")
        self.known = self.ledger.seen() | self.refusals.seen()
        self.first_seen: dict[str, float] = {}  # folders waiting for their secret: when this service first saw them
        self.failed: dict[str, int] = {}  # folders whose decision raised: how many times (DECIDE_TRIES)
        self.decided: dict[str, int] = {}  # decisions per owning account in this run (fair turns within a scan)
        self.listing: dict[str, exchange.Arrival] = {}  # undecided folders, each looked at once
        self.pending: dict[tuple[str, str], list[float]] = {}  # graded attempts decided but not finished
        self.finishing = 0  # graded attempts whose page and gradebook entry are being written (not idle yet)
        self.lock = threading.Lock()
        self.bookkeeping: queue.Queue = queue.Queue()
        self.counts, self.settings = {"graded": 0, "not_graded": 0, "refused": 0}, settings
        self._listing_failed = False
        exchange.prepare(options.exchange, options.course_id)  # raises UnsafeExchange on a folder not its own
        self.pool = Pool(course, settings, options.workers) if options.cluster is None else ClusterPool(
            course, settings, options.workers, options.cluster)
        self.books = threading.Thread(target=self._keep_books, daemon=True, name="gradebook")
        self.books.start()
        self.lms_due, self.stopping = threading.Event(), threading.Event()
        self.lms = threading.Thread(target=self._pass_grades_back, daemon=True, name="lms") if options.lms else None
        if self.lms is not None:
            self.lms.start()

    def policy(self, student: str, assignment: str) -> Policy:
        """The class's attempts policy with this learner's accommodation (``accommodations``: extra attempts)."""
        from grader.service.accommodations import policy_for

        return policy_for(self.options.policy, self.options.out, student, assignment)

    # -- 1, 2: what arrived, and whether it is graded now ------------------------------------------------------
    def _arrivals(self) -> list[exchange.Arrival]:
        try:
            found = exchange.arrivals(self.options.exchange, self.options.course_id, self.known,
                                      self.course.assignments(), check_owner=self.options.check_owner,
                                      cache=self.listing)
        except OSError as error:
            if not self._listing_failed:  # said once, not four times a second
                print(f"serve: WARNING: the inbound folder cannot be listed ({error}); nothing is graded until it "
                      "can be", file=sys.stderr, flush=True)
            self._listing_failed = True
            return []
        if self._listing_failed:
            print("serve: the inbound folder can be listed again", file=sys.stderr, flush=True)
        self._listing_failed = False
        return found

    def scan(self) -> int:
        """Look at up to ``MAX_PER_SCAN`` new folders in turns across accounts (``exchange.fair_turns``: a learner who
        makes thousands of folders does not hold back everyone else's submissions) and decide what can be."""
        found = self._arrivals()
        listed = {a.name for a in found}
        self.first_seen = {name: t for name, t in self.first_seen.items() if name in listed}  # gone: not waited for
        taken = 0
        for arrival in exchange.fair_turns(found, self.decided, MAX_PER_SCAN):
            try:
                decided = self.take(arrival, time.time())
            except Exception as error:  # noqa: BLE001 - one folder (a full disk, a vanished file) never stops the loop
                tries = self.failed[arrival.name] = self.failed.get(arrival.name, 0) + 1
                decided = tries >= DECIDE_TRIES
                print(f"serve: {arrival.shown}: could not be decided ({type(error).__name__}: {error}); " + (
                      "it is left in the exchange for the instructor's own collect" if decided else
                      f"tried again next ({tries} of {DECIDE_TRIES})"), file=sys.stderr, flush=True)
            if decided:
                self.known.add(arrival.name)
                self.first_seen.pop(arrival.name, None)
                self.decided[arrival.owner] = self.decided.get(arrival.owner, 0) + 1
                taken += 1
        return taken

    def take(self, arrival: exchange.Arrival, now: float) -> bool:
        """Decide one folder; False when it may still be arriving (no secret yet, within the grace period)."""
        notebook = Path(notebook_name(arrival.assignment_id)).stem
        if arrival.problem:
            self._refuse(arrival, now, arrival.problem, None)
            return True
        with exchange.open_folder(arrival, check_owner=self.options.check_owner) as (opened, problem):
            secret = exchange.secret(opened) if opened else None
            if opened and not problem and secret is None:
                first = self.first_seen.setdefault(arrival.name, time.monotonic())
                if time.monotonic() - first < SUBMIT_GRACE_S:
                    return False  # nbgrader's submit writes the secret last: it may still be copying
                problem = "the submission has no readable submission_secret.txt (submit again)"
            if problem:
                self._refuse(arrival, now, problem, secret)
                return True
            key = (arrival.student_id, arrival.assignment_id)
            with self.lock:
                earlier = self.ledger.attempts(*key) + [Attempt("", t, True) for t in self.pending.get(key, [])]
                decision = decide(self.policy(*key), earlier, now)
                if decision.grade:
                    self.pending.setdefault(key, []).append(now)
            if not decision.grade:
                self._over_limit(arrival, now, decision, secret, notebook)
                return True
            try:
                folder, submitted, note = self._copy(arrival, opened, key, now)
            except BaseException:  # not taken after all: its place among the pending attempts is given back
                with self.lock:
                    self.pending[key].remove(now)
                raise
        if note:
            print(f"serve: {arrival.shown}: {note}", file=sys.stderr, flush=True)
        job = Job(arrival.student_id, arrival.assignment_id, submitted)
        settings = dataclasses.replace(self.settings, out=folder)
        self.pool.submit(Task(job, settings, lambda result: self.finished(arrival, secret, now, folder, result, note)))
        return True

    def _copy(self, arrival: exchange.Arrival, opened, key: tuple[str, str], now: float):
        """The attempt's folder, with the submitted notebook copied in from the opened folder: (folder, the
        submission's folder in it, a note on its time stamp)."""
        number = len(self.ledger.attempts(*key)) + len(self.pending[key])
        folder = attempt_folder(self.state, arrival.student_id, arrival.assignment_id, arrival.name, number)
        submitted = folder / "submitted" / arrival.student_id / arrival.assignment_id
        shutil.rmtree(folder, ignore_errors=True)  # a half-graded attempt of a service that stopped
        # Due dates: the later of the learner's time and the service's own, so an edited timestamp.txt (or folder
        # name) cannot backdate a submission. It arrived when first seen (a folder waiting for its secret).
        seen = now - (time.monotonic() - self.first_seen[arrival.name]) if arrival.name in self.first_seen else now
        stamp, note = timestamps.later_of(arrival.timestamp, seen)
        exchange.copy_notebook(opened, notebook_name(arrival.assignment_id), stamp, submitted, MAX_NOTEBOOK_BYTES)
        return folder, submitted, note

    def _refuse(self, arrival: exchange.Arrival, now: float, reason: str, secret: str | None) -> None:
        """Not anyone's submission: recorded under the account that owns the folder, never in a learner's ledger."""
        self.counts["refused"] += 1
        if not self.refusals.add(arrival.owner, {"name": arrival.name, "arrived": now, "reason": reason}):
            if self.refusals.first_time_full(arrival.owner):
                print(f"serve: {arrival.owner}: over {self.refusals.KEPT_PER_ACCOUNT} refused folders; further ones "
                      "are neither recorded nor answered", file=sys.stderr, flush=True)
            return
        print(f"serve: {arrival.shown}: refused: {reason}", file=sys.stderr, flush=True)
        if secret is not None:
            notebook = Path(notebook_name(arrival.assignment_id)).stem if arrival.assignment_id else "notebook"
            said = f"Your submission {timestamps.shown(arrival.timestamp)} could not be graded: {reason}."
            exchange.release(self.options.exchange, self.options.course_id, secret, notebook,
                             pages.page("Not graded", [said]))

    def _over_limit(self, arrival, now: float, decision, secret: str, notebook: str) -> None:
        limit = self.policy(arrival.student_id, arrival.assignment_id)
        said = (f"You have used {decision.used} of {limit.graded_per_window} graded attempts in the last "
                f"{limit.window_hours:g} hours. The next submission that will be graded is one made after "
                f"{pages.when(decision.next_at)}.")
        with self.lock:
            attempts = self.ledger.add(arrival.student_id, arrival.assignment_id,
                                       Attempt(arrival.name, now, False, "over_limit", message=said))
        history.append(self.options.out, arrival.student_id, arrival.assignment_id, "attempt",
                       f"submitted {arrival.timestamp}: over the limit ({limit.describe()})", status="over_limit",
                       number=len(attempts), counts=False)
        counted = counting(limit, attempts)
        if counted is not None:
            said += f" The attempt that counts now is your graded attempt of {pages.when(counted.arrived)}: " \
                    f"{pages.standing(self.options, self.course.root, arrival.student_id, arrival.assignment_id, counted)}."
        exchange.release(self.options.exchange, self.options.course_id, secret, notebook, pages.page(
            "Received, not graded now", [
                f"Your submission of {arrival.assignment_id} ({timestamps.shown(arrival.timestamp)}) is saved. {said}",
                f"The course's rule: {limit.describe()}. A submission over the limit does not count and shows no "
                "test results; this keeps Submit from becoming a way to probe the hidden tests. Keep working with "
                "Validate, which runs the visible checks as often as you like."]))
        self.counts["not_graded"] += 1
        print(f"serve: {arrival.shown}: over_limit: {said}", file=sys.stderr, flush=True)

    # -- 4: the learner's page ------------------------------------------------------------------------------------
    def finished(self, arrival: exchange.Arrival, secret: str, arrived: float, folder: Path,
                 result: NotebookResult | None, note: str = "") -> None:
        key = (arrival.student_id, arrival.assignment_id)
        status = result.status.value if result is not None else "grader_error"
        # our failure, or an upload that is no readable notebook: not graded, costs no attempt, never counts
        graded = status not in NOT_GRADED
        penalty, late_lines = self._late(result) if graded else (None, [])
        submitted = folder / "submitted" / arrival.student_id / arrival.assignment_id / notebook_name(
            arrival.assignment_id)
        attempt = Attempt(arrival.name, arrived, graded, status, result.reported_score if result else None,
                          result.max_score if result else None, result.message[:500] if result and not graded else "",
                          penalty=penalty.points if penalty else 0.0, content=content_digest(submitted))
        with self.lock:
            self.pending[key].remove(arrived)
            self.finishing += 1  # idle only once its page is out and its result queued for the gradebook
            attempts = self.ledger.add(*key, attempt)
            counted = counting(self.options.policy, attempts)
            before = counting(self.options.policy, attempts[:-1])
        history.append(self.options.out, *key, "attempt", f"submitted {arrival.timestamp}"
                       + ("" if graded else f": not graded ({attempt.message or attempt.status})"),
                       number=len(attempts), status=attempt.status, score=attempt.score, max_score=attempt.max_score,
                       penalty=attempt.penalty, content=attempt.content[:16], counts=counted is attempt,
                       rule=self.options.policy.counts)
        try:
            self._release(arrival, secret, folder, result, note, attempt, attempts, counted, late_lines,
                          again=counted is not before and counted is not attempt)
        finally:
            with self.lock:
                self.finishing -= 1

    def _release(self, arrival, secret, folder, result, note, attempt: Attempt, attempts, counted,
                 late_lines: list[str], again: bool = False) -> None:
        """The learner's feedback page for ``attempt`` (of ``attempts``; ``counted``: the one that counts now), and
        the counting result queued for the gradebook. ``again``: an earlier attempt counts again (``last``: this one
        repeats its answers after a different one counted)."""
        notebook = Path(notebook_name(arrival.assignment_id)).stem
        arrived, graded = attempt.arrived, attempt.graded
        policy = self.policy(arrival.student_id, arrival.assignment_id)
        used = sum(1 for a in attempts if a.graded and arrived - a.arrived < policy.window_hours * 3600)
        number = sum(1 for a in attempts if a.status != "over_limit")
        lines = [f"Graded by the course's grading service at {pages.when(time.time())}: attempt {number} of "
                 f"{arrival.assignment_id} ({timestamps.shown(arrival.timestamp)})."]
        student, assignment = arrival.student_id, arrival.assignment_id
        if graded:
            rule = policy.describe().split("; ", 1)[1]
            lines.append(f"Graded attempts used in the last {policy.window_hours:g} hours: {used}"
                         + (f" of {policy.graded_per_window}" if policy.graded_per_window else "")
                         + f". The course's rule: {rule}."
                         + (f" This attempt is the one that counts now: {pages.own(attempt, result)}."
                            + pages.regrade(self.options.out, student, assignment, folder)
                            if counted is attempt else
                            f" The one that counts now is your attempt of {pages.when(counted.arrived)}: "
                            f"{pages.standing(self.options, self.course.root, student, assignment, counted)}."))
        elif attempt.status in UNREADABLE:
            now = counting(policy, attempts)
            lines.append(f"This upload could not be read as the assignment's notebook ({attempt.status.replace('_', ' ')}"
                         f": {attempt.message or 'no message'}). It is not graded, does not count, and uses none of "
                         f"your graded attempts. Submit {notebook_name(assignment)} again from the assignment's "
                         "folder" + (f"; until then the attempt that counts is your attempt of {pages.when(now.arrived)}: "
                                     f"{pages.standing(self.options, self.course.root, student, assignment, now)}."
                                     if now else "."))
        else:
            lines.append("The grader failed on its side; this attempt is not counted against your limit. "
                         "Submit again, or tell your instructor if it happens twice.")
        lines += [note[:1].upper() + note[1:] + "."] if note else []
        lines += late_lines + (pages.appeal_hint(assignment, result) if graded and counted is attempt else [])
        feedback = Gradebook(folder).feedback_path(arrival.student_id, arrival.assignment_id, notebook_name(
            arrival.assignment_id))
        try:
            text = feedback.read_text(encoding="utf-8") if attempt.status not in UNREADABLE else ""
        except OSError:
            text = ""
        if not text:
            text = pages.page("Not graded" if attempt.status in UNREADABLE else "Feedback",
                        [] if attempt.status in UNREADABLE else ["The grader wrote no feedback page for this submission."])
        exchange.release(self.options.exchange, self.options.course_id, secret, notebook, pages.with_banner(text, lines))
        self.counts["graded" if graded else "not_graded"] += 1
        if (counted is attempt or again) and result is not None and graded:
            submitted = folder / "submitted" / arrival.student_id / arrival.assignment_id
            if submitted.is_dir():  # for nbgrader's release_feedback (formgrader's button), after hand grading
                (submitted / "submission_secret.txt").write_text(secret, encoding="utf-8")
            # Again: this attempt's grading (the same answers, graded with the tests as they are now) goes into the
            # gradebook in place of the one that counted before, with the earlier attempt's time, as it counts.
            stamped = attempt_folder(self.state, student, assignment, counted.name) if again else folder
            self.bookkeeping.put((folder, result, stamped or folder))
        print(f"serve: {arrival.student_id}/{arrival.assignment_id}: "
              f"{attempt.status} {'-' if attempt.score is None else f'{attempt.score:g}'}/"
              f"{'-' if attempt.max_score is None else f'{attempt.max_score:g}'}, feedback released "
              f"{time.time() - arrived:.1f} s after it arrived", file=sys.stderr, flush=True)

    def _late(self, result: NotebookResult):
        """(the late penalty on this attempt's autograded points, the banner's lines saying it): nbgrader's due dates
        and extensions in the course's gradebook, or the course's own (``grader.nbgrader_adapter.late``)."""
        from grader.nbgrader_adapter.late import penalties

        key = (result.student_id, result.assignment_id, result.notebook)
        try:
            penalty = penalties([result], {}, self.options.gradebook, self.course.root).get(key)
        except Exception as error:  # noqa: BLE001 - a bad due date in the configuration never withholds a page
            print(f"serve: the late penalty could not be decided ({type(error).__name__}: {error})", file=sys.stderr,
                  flush=True)
            return None, ["Whether this submission is late could not be decided; your instructor has been told."]
        return penalty, [penalty.message] if penalty else []

    # -- 5: the gradebook, off the learner's path ------------------------------------------------------------------
    def _keep_books(self) -> None:
        """Publish counting attempts as they come; those that queued meanwhile go into the gradebook together (one
        pass of nbgrader's database and tables for a burst, not one per submission)."""
        while True:
            batch = [self.bookkeeping.get()]
            while True:
                try:
                    batch.append(self.bookkeeping.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            items = [item for item in batch if item is not None]
            try:
                if items:
                    self.publish(items)
            except Exception as error:  # noqa: BLE001 - each attempt's own folder keeps everything; say so
                print(f"serve: could not publish {len(items)} result(s) into the gradebook "
                      f"({type(error).__name__}: {error}); their files stay in {self.state / 'attempts'}",
                      file=sys.stderr, flush=True)
            finally:
                for _ in batch:
                    self.bookkeeping.task_done()
            if stop:
                return

    def publish(self, items: list[tuple[Path, NotebookResult, Path]]) -> None:
        """Each counting attempt into the course's gradebook (``publish.publish``), then the LMS told (``lms``)."""
        from grader.service.publish import publish

        publish(self.course, self.options.out, self.options.gradebook, items)
        self.lms_due.set()

    def _pass_grades_back(self) -> None:
        """Post the totals that changed to the LMS (``grader.lms``): after each publish and every ``LMS_TICK_S`` (a
        hand grade, an answered appeal or ``grade --test`` changes totals outside the service); the history is the
        queue and its back-off, so a round that fails loses nothing."""
        from grader.lms.sync import sync_due

        while not self.stopping.is_set():
            self.lms_due.wait(LMS_TICK_S)
            self.lms_due.clear()
            try:
                done = sync_due(self.options.out, self.options.lms, self.options.gradebook)
                if done.posted or done.refused:
                    print(f"serve: the LMS: {len(done.posted)} grade(s) posted, {len(done.refused)} refused "
                          "(python -m grader lms status)", file=sys.stderr, flush=True)
            except Exception as error:  # noqa: BLE001 - the grades wait in the history for the next round
                print(f"serve: the LMS could not be reached this round ({type(error).__name__}: {error})",
                      file=sys.stderr, flush=True)

    def deliver_answers(self) -> None:
        """Release the instructor's answers to regrade requests with the learners' feedback (``appeals``)."""
        from grader.service.appeals import deliver

        try:
            deliver(self.options.out, self.options.exchange, self.options.course_id)
        except Exception as error:  # noqa: BLE001 - answers wait for the next round; grading goes on
            print(f"serve: answers to regrade requests could not be released ({type(error).__name__}: {error})",
                  file=sys.stderr, flush=True)

    def still_arriving(self) -> bool:
        """Whether a folder is waiting for its secret (``--once`` waits for it, up to the grace period)."""
        return bool(self.first_seen)

    def idle(self) -> bool:
        with self.lock:
            pending = any(self.pending.values()) or self.finishing
        return not pending and self.pool.waiting() == 0 and self.bookkeeping.unfinished_tasks == 0

    def status(self) -> dict:
        with self.lock:
            grading = sum(len(v) for v in self.pending.values())
        return {"grading": grading, "waiting": self.pool.waiting(), **self.counts,
                "policy": self.options.policy.describe()}

    def close(self) -> None:
        """Stop the kernels, then let the gradebook thread publish what is queued before the process ends (a daemon
        thread killed mid-publish left results/ copied and grades.csv unwritten)."""
        self.pool.close()
        self.bookkeeping.put(None)
        self.books.join()
        self.stopping.set()
        self.lms_due.set()
        if self.lms is not None:
            self.lms.join(timeout=30)  # a round in flight ends within its requests' timeouts
