"""When a submission was made: nbgrader's ``timestamp.txt``, read as the learner's word, and the service's clock.

nbgrader's ``submit`` writes the learner's own clock into ``timestamp.txt`` (``2026-12-01 19:30:00.123456 UTC``,
``Exchange.timestamp_format``) and ``collect`` keeps it: on the collect path it is what the learner's machine said,
as in stock nbgrader. The grading service also sees each folder arrive on its own clock; ``later_of`` takes the later
of the two, so a learner who edits ``timestamp.txt`` to a time before the due date gains nothing there.

A timestamp that cannot be read, or that is absurd (before ``EARLIEST`` or later than the moment it is read, with
``FUTURE_SLACK_S`` for clocks that differ), gives no time of the learner's and a note that says why, never an
exception: ``read`` then records the time the grader read it, ``later_of`` the service's arrival. nbgrader's
``parse_utc`` hands the third word of a timestamp to dateutil's ``gettz``, which reads a file of that name (an absolute
path anywhere on the grader's host, or a relative one, which raises a warning as an exception when it leaves the
zoneinfo folder), so that word must look like a zone name or an offset (``ZONE``) before it is parsed.
"""
from __future__ import annotations

import datetime
import re
from pathlib import Path

from grader.submission.intake import read_small_text, shown_name

FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's default Exchange.timestamp_format, in UTC
EARLIEST = datetime.datetime(2000, 1, 1)
FUTURE_SLACK_S = 3600.0  # a learner's clock may run ahead of the grader's by this much
SHOWN_CHARS = 60
# the time zone word nbgrader's submit writes (%Z: 'UTC', 'CET'), an IANA name ('Europe/Berlin') or an offset in seconds
ZONE = re.compile(r"[+-]?[0-9]{1,6}|[A-Za-z][A-Za-z0-9_+-]{0,39}(/[A-Za-z][A-Za-z0-9_+-]{0,39}){0,2}", re.ASCII)


class BadTimestamp(ValueError):
    """A timestamp that says no usable time; its text says why, in the learner's and instructor's words."""


def shown(text: str) -> str:
    """A timestamp of nbgrader's format as a page shows it, to the second (``2026-12-01 19:30:00 UTC``); any other
    text unchanged."""
    try:
        return datetime.datetime.strptime(text, FORMAT).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError):
        return text


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def parse(text: str, now: datetime.datetime | None = None) -> datetime.datetime:
    """nbgrader's timestamp as a naive UTC datetime (nbgrader's ``parse_utc``); raises ``BadTimestamp``."""
    from nbgrader.utils import parse_utc

    text = str(text).strip()
    shown = shown_name(text[:SHOWN_CHARS])
    words = text.split(" ")
    if len(words) == 3 and not ZONE.fullmatch(words[2]):  # parse_utc would open a file of that name
        raise BadTimestamp(f"the submission's time {shown!r} in timestamp.txt is not a date and time (its time zone "
                           "is not a zone name)")
    try:
        when = parse_utc(text)
    except Exception as error:  # noqa: BLE001 - dateutil raises ValueError, OverflowError, even warnings: all mean no time
        raise BadTimestamp(f"the submission's time {shown!r} in timestamp.txt is not a date and time "
                           f"({type(error).__name__})") from None
    if when is None or when < EARLIEST:
        raise BadTimestamp(f"the submission's time {shown!r} in timestamp.txt is before {EARLIEST:%Y}: not a real "
                           "submission time")
    now = now or utc_now()
    if (when - now).total_seconds() > FUTURE_SLACK_S:
        raise BadTimestamp(f"the submission's time {shown!r} in timestamp.txt is later than the time it was read "
                           f"({now:%Y-%m-%d %H:%M} UTC): not a real submission time")
    return when


def show(when: datetime.datetime) -> str:
    """nbgrader's form of a naive UTC time."""
    return when.strftime(FORMAT)


GRADED_COUNTS = "the time it was graded counts"


def read(folder: Path, now: datetime.datetime | None = None) -> tuple[str, str]:
    """(the submission time in nbgrader's form; a note when it is not the learner's): ``folder/timestamp.txt``.

    A missing, unreadable or absurd time counts as ``now``, the moment the grader reads the folder: the latest time
    the submission is known to have existed, never an earlier one, so a learner who breaks the file is never on
    time for it (on the service's path the file holds the service's own time, ``later_of``)."""
    now = now or utc_now()
    text = read_small_text(folder / "timestamp.txt")
    if text is None:
        return show(now), f"the submission has no readable timestamp.txt: {GRADED_COUNTS}"
    try:
        return show(parse(text, now)), ""
    except BadTimestamp as bad:
        return show(now), f"{bad}: {GRADED_COUNTS}"


def later_of(learner: str | None, arrived: float) -> tuple[str, str]:
    """The submission time the service records: the later of the learner's ``timestamp.txt`` (or folder name) and
    ``arrived``, the service's own clock when the folder arrived (seconds since the epoch). Returns (the time in
    nbgrader's form, a note when the learner's time was not used)."""
    seen = datetime.datetime.fromtimestamp(arrived, datetime.timezone.utc).replace(tzinfo=None)
    if not learner:
        return show(seen), "the submission carries no time of its own: the time it reached the grading service counts"
    try:
        claimed = parse(learner, seen)
    except BadTimestamp as bad:
        return show(seen), f"{bad}; the time it reached the grading service counts"
    if claimed < seen:
        return show(seen), ""  # the usual case: submitted, then seen a moment later
    return show(claimed), ""
