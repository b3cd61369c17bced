"""Find and read a submitted notebook without trusting anything in it.

Everything here is bounded before any of the file is believed: the size comes
from ``fstat`` before a byte is read (and at most the limit plus one byte is
ever read), the resume fingerprint is a streaming digest (or, for a file over
the limit, its size and time stamp, so a 1 TiB sparse file is never read), the
JSON's nesting depth is measured on the bytes before it is parsed, and the
numbers of cells and characters of source are checked before nbformat sees the
notebook. Every check is linear in the file's size. A submission over a limit
ends ``too_large`` with a message naming the limit; one that is not a notebook
ends ``invalid_notebook``; neither ever raises anything but ``InvalidSubmission``.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np

from grader.identifiers import escape_controls

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_CELLS = 2000  # the course notebooks have under 50
MAX_NESTING = 100  # JSON depth; a notebook needs under 10, widget state a few more
MAX_CELL_SOURCE_CHARS = 512 * 1024  # one cell's source
MAX_SOURCE_CHARS = 2 * 1024 * 1024  # all cells' sources together
CHUNK = 1024 * 1024


class InvalidSubmission(Exception):
    """The submission cannot be graded; ``status`` says why."""

    def __init__(self, status: str, message: str, fingerprint: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.fingerprint = fingerprint  # of the file that was rejected, for resuming; None: no file


@dataclass
class Submission:
    path: Path
    notebook: nbformat.NotebookNode
    sha256: str
    duplicate_cell_ids: list[str]


class Deadline:
    """A time budget for the work done on a submission before any of it runs."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def expired(self) -> bool:
        return time.monotonic() > self.ends

    def check(self, doing: str) -> None:
        if self.expired():
            raise InvalidSubmission(
                "too_large", f"preparing the notebook took longer than {self.seconds:g} s (stopped while {doing}); "
                             "the notebook is too large or too complex to grade")


def shown_name(name: str) -> str:
    """``name`` with every unprintable character (and the backslash) escaped: printable, distinct for distinct names."""
    return escape_controls(name.replace("\\", "\\\\"))


def locate(folder: Path, expected_name: str) -> Path:
    """The notebook the course asked for, or ``InvalidSubmission``."""
    expected = folder / expected_name
    try:
        mode = expected.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise InvalidSubmission("invalid_notebook", f"{expected_name} cannot be read: {_reason(error)}") from None
    if mode is not None:
        if stat.S_ISLNK(mode):
            raise InvalidSubmission("invalid_notebook", f"{expected_name} is a symbolic link, not a file; links are "
                                                        "not followed: submit the notebook itself")
        if not stat.S_ISREG(mode):
            raise InvalidSubmission("invalid_notebook", f"{expected_name} is not a regular file")
        return expected
    try:
        others = sorted(shown_name(p.name) for p in folder.glob("*.ipynb"))[:10] if folder.is_dir() else []
    except OSError as error:
        raise InvalidSubmission("invalid_notebook", f"the folder cannot be read: {_reason(error)}") from None
    if others:
        raise InvalidSubmission(
            "invalid_notebook", f"expected a notebook named {expected_name}, found {', '.join(others)}"
        )
    raise InvalidSubmission("missing", f"no {expected_name} was submitted")


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def _open(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at ``path`` (never through a link, never blocking), and its stat."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InvalidSubmission("invalid_notebook", f"{path.name} is not a regular file")
    return fd, info


def _over_limit(info: os.stat_result) -> str:
    """The fingerprint of a file too large to read: its size and time stamp, never its bytes."""
    return f"size:{info.st_size}:mtime:{info.st_mtime_ns}"


def fingerprint(path: Path) -> str | None:
    """What the resume check compares: a streaming SHA-256 of the file, read only when it is within the limit."""
    try:
        fd, info = _open(path)
    except (OSError, InvalidSubmission):
        return None
    try:
        if info.st_size > MAX_NOTEBOOK_BYTES:
            return _over_limit(info)
        digest = hashlib.sha256()
        read = 0
        while read <= MAX_NOTEBOOK_BYTES:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            read += len(chunk)
            digest.update(chunk)
        return _over_limit(info) if read > MAX_NOTEBOOK_BYTES else digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_bounded(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their SHA-256, or ``too_large`` before more than the limit was read."""
    try:
        fd, info = _open(path)
    except OSError as error:
        raise InvalidSubmission("invalid_notebook", f"the notebook cannot be read: {_reason(error)}") from None
    try:
        if info.st_size > MAX_NOTEBOOK_BYTES:
            raise InvalidSubmission("too_large", f"the notebook is {info.st_size} bytes; the limit is "
                                                 f"{MAX_NOTEBOOK_BYTES} bytes", _over_limit(info))
        chunks, read, sha = [], 0, hashlib.sha256()
        while read <= MAX_NOTEBOOK_BYTES:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
            sha.update(chunk)
        if read > MAX_NOTEBOOK_BYTES:  # it grew after the stat
            raise InvalidSubmission("too_large", f"the notebook is over the limit of {MAX_NOTEBOOK_BYTES} bytes",
                                    _over_limit(info))
        return b"".join(chunks), sha.hexdigest()
    except OSError as error:
        raise InvalidSubmission("invalid_notebook", f"the notebook cannot be read: {_reason(error)}") from None
    finally:
        os.close(fd)


def read_small_text(path: Path, limit: int = 256) -> str | None:
    """A small learner file's text (a regular file, never through a link or blocking, at most ``limit`` bytes),
    or None when it is anything else."""
    try:
        fd, info = _open(path)
    except (OSError, InvalidSubmission):
        return None
    try:
        data = os.read(fd, limit + 1) if info.st_size <= limit else b""
        return data.decode("utf-8") if data and len(data) <= limit else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def stage_notebook(source: Path, target: Path) -> None:
    """Put a submitted notebook at ``target`` for the grader without following a link, opening a special file
    or reading past the size limit: a regular file within the limit is copied; anything else is recreated as
    what it is (a link with the same text, an empty file of the same size, a FIFO), so that reading ``target``
    gives the same refusal and message as reading ``source``; a missing one stays missing."""
    try:
        info = os.lstat(source)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), target)
    elif not stat.S_ISREG(info.st_mode):
        os.mkfifo(target, 0o600)
    elif info.st_size > MAX_NOTEBOOK_BYTES:
        with open(target, "wb") as handle:
            handle.truncate(info.st_size)  # sparse: the grader reports too_large from its size
    else:
        try:
            data, _ = _read_bounded(source)
        except InvalidSubmission:
            return
        target.write_bytes(data)


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of JSON arrays and objects in ``data``, counted on the bytes.

    Linear and without recursion: escaped backslashes and quotes are removed
    (left to right, as a JSON parser reads them), then a bracket counts only
    when an even number of quotes precedes it. Processed in chunks, so memory
    stays small whatever the file holds.
    """
    text = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    deepest = depth = 0
    in_string = False
    for start in range(0, len(text), CHUNK):
        codes = np.frombuffer(text, dtype=np.uint8, count=min(CHUNK, len(text) - start), offset=start)
        quotes = np.flatnonzero(codes == ord('"'))
        opening = (codes == ord("[")) | (codes == ord("{"))
        marks = np.flatnonzero(opening | (codes == ord("]")) | (codes == ord("}")))
        if marks.size:
            structural = marks[(np.searchsorted(quotes, marks) + in_string) % 2 == 0]
            if structural.size:
                levels = depth + np.cumsum(np.where(opening[structural], 1, -1))
                deepest = max(deepest, int(levels.max()))
                depth = int(levels[-1])
        in_string ^= bool(quotes.size % 2)
    return deepest


def duplicate_ids(ids: list[str]) -> list[str]:
    """Ids that occur more than once, sorted (one pass)."""
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def _text_length(source) -> int:
    if isinstance(source, str):
        return len(source)
    if isinstance(source, list):
        return sum(len(line) for line in source if isinstance(line, str))
    return 0


def read(path: Path, deadline: Deadline | None = None) -> Submission:
    raw_bytes, sha256 = _read_bounded(path)

    def reject(status: str, message: str):
        return InvalidSubmission(status, message, sha256)

    depth = nesting_depth(raw_bytes)
    if depth > MAX_NESTING:
        raise reject("too_large", f"the notebook's JSON is nested {depth} levels deep; the limit is {MAX_NESTING}")
    if deadline is not None:
        deadline.check("reading the notebook")
    try:
        raw = json.loads(raw_bytes.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise reject("invalid_notebook", f"the file is not valid JSON ({error})") from None
    except ValueError as error:  # JSONDecodeError, and the plain ValueError of an integer over 4,300 digits
        raise reject("invalid_notebook", f"the file is not valid JSON ({str(error)[:200]})") from None
    except RecursionError:  # the depth check makes this unreachable; kept as a second line
        raise reject("too_large", f"the notebook's JSON is nested more than {MAX_NESTING} levels deep") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise reject("invalid_notebook", "the file is JSON but not a Jupyter notebook")
    cells = raw["cells"]
    if len(cells) > MAX_CELLS:
        raise reject("too_large", f"the notebook has {len(cells)} cells; the limit is {MAX_CELLS}")
    total = 0
    for number, cell in enumerate(cells):
        length = _text_length(cell.get("source")) if isinstance(cell, dict) else 0
        if length > MAX_CELL_SOURCE_CHARS:
            raise reject("too_large", f"cell {number} has {length} characters of source; the limit is "
                                      f"{MAX_CELL_SOURCE_CHARS} per cell")
        total += length
    if total > MAX_SOURCE_CHARS:
        raise reject("too_large", f"the notebook's cells hold {total} characters of source; the limit is "
                                  f"{MAX_SOURCE_CHARS}")
    duplicates = duplicate_ids([c["id"] for c in cells if isinstance(c, dict) and isinstance(c.get("id"), str)])
    for number, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        if "id" in cell:
            cell["id"] = f"submitted-{number}"  # duplicates would make nbformat reject or rewrite them
        if cell.get("cell_type") == "code":
            cell["outputs"] = []  # never used (only sources are taken), so never validated or kept
    if deadline is not None:
        deadline.check("checking the notebook's structure")
    try:
        if raw.get("nbformat") != 4:
            raise ValueError(f"nbformat {raw.get('nbformat')!r} is not supported (expected 4)")
        notebook = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # noqa: BLE001 - nbformat on untrusted data: any failure means "not a notebook"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise reject("invalid_notebook", f"the file is not a valid notebook: {first_line[:300]}") from None
    return Submission(path, notebook, sha256, duplicates)
