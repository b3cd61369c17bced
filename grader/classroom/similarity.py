"""Similar answers, shown to the instructor: learners whose own code is identical or very similar.

A reason to look, never a verdict: two learners may reach the same few lines on their own, and a pair that shares
code says nothing about who wrote it. The class report lists the pairs (``class_page``), each with its score and the
two learners' code side by side, the shared passages marked.

What is compared is each learner's *own* code in an assignment: the answer cells (nbgrader's solution cells) and the
code cells they added, as the autograded notebooks hold them (``{out}/autograded/{student}/{assignment}/``).
Fingerprints are winnowed k-grams of the code's tokens, names and literals normalised by copydetect's filter (the
method of MOSS: Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003), so renamed variables or re-flowed lines
still match. The code is fingerprinted in its normal form (``grader.classroom.normal_form``): statements that do
nothing (``pass``, ``; pass``, docstrings and ``...``, ``x = x``, ``if True:``) are left out, so a copy dressed in them
still matches. The k-grams are hashed with a hash of their own (a polynomial over the characters, mixed by
splitmix64), not Python's ``hash()`` of a string, which changes with ``PYTHONHASHSEED``: a class's pairs and shares
are the same in every run. The course's given code (the released notebook's answer cells) and the instructor's
solution are boilerplate: their fingerprints are removed first, so learners who write the lesson's idioms, or the
solution itself, share nothing. So are fingerprints that more than ``COMMON_SHARE`` of the class share. Pairs are
found through an index of the remaining fingerprints (no comparison of every pair of a class), and scored by
copydetect's ``compare_files``: the share of each learner's fingerprinted code found in the other's.

Learners whose answer cells and added cells are the same (blank lines and trailing spaces aside) are "identical": the
grader ran such notebooks once and judged the run for each of them (``grader.classroom.identical``); renamed
variables or moved lines make a pair "similar", with the share of code they have in common. A learner with no own code
left (a blank notebook, or the solution) is never paired.
"""
from __future__ import annotations

import concurrent.futures
import difflib
import itertools
import json
import multiprocessing
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader import cells
from grader.classroom.normal_form import Form, normal_form

#: copydetect's defaults: k-grams of 25 tokens, a match of 30 or more tokens is always found
NOISE_T, GUARANTEE_T = 25, 30
#: a pair is listed when one of the two has at least this share of their code in common with the other, and the
#: passages they share are at least ``MIN_TOKENS`` tokens long (a few short answers alike are what a lesson expects)
THRESHOLD = 0.6
MIN_TOKENS = 40
#: fingerprints that more than this share of the class's learners have (and more than ``COMMON_MIN``) are common
#: idioms of the class, not copies (the lesson's own idioms are the solution's, left out as boilerplate already)
COMMON_SHARE, COMMON_MIN = 0.2, 10
#: from this many distinct answers on, they are fingerprinted on every core
PARALLEL_FROM = 200
#: an autograded notebook larger than this is not read (the course's are about 100 KB)
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
#: the k-gram hash: a polynomial in this base over the characters (mod 2**64), then splitmix64's finalizer, its top 53
#: bits kept (exact even as a float); the same in every process, unlike ``hash()`` of a string
_BASE = 0x100000001B3
_POWERS = np.array([pow(_BASE, NOISE_T - 1 - j, 2 ** 64) for j in range(NOISE_T)], dtype=np.uint64)
_MIX = (np.uint64(30), np.uint64(0xBF58476D1CE4E5B9), np.uint64(27), np.uint64(0x94D049BB133111EB), np.uint64(31))


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(str(part) for part in source) if isinstance(source, list) else str(source)


@dataclass(frozen=True)
class Code:
    """One learner's own code in one assignment."""

    student: str
    assignment: str
    notebook: str
    text: str  # the lines the learner wrote (``own_code``)
    cells: str = ""  # their answer and added cells whole: equal for two learners, the grader ran one notebook


@dataclass
class Pair:
    """Two learners whose own code is identical or very similar, and the passages they share."""

    assignment: str
    first: Code
    second: Code
    shares: tuple[float, float]  # the share of each one's fingerprinted code found in the other's
    identical: bool
    marked: tuple[list[tuple[int, int]], list[tuple[int, int]]] = field(default_factory=lambda: ([], []))

    @property
    def score(self) -> float:
        return max(self.shares)


def answer_cells(notebook) -> str:
    """The sources of a notebook's answer code cells and added code cells, whole: what the rebuild keeps of a
    learner's notebook, so two learners with the same hand the grader's kernel the same notebook."""
    return "\n".join(_source(c) for c in _cells(notebook) if c.get("cell_type") == "code"
                     and (not cells.nbgrader(c) or cells.is_solution(c)))


def own_code(notebook, given: dict[str, str] | None = None) -> str:
    """The learner's own code of an autograded notebook: the lines of its answer code cells that the released cell
    (``given``: grade_id -> source) does not have, and the code cells the learner added (no nbgrader role), in order.
    Test cells, given cells, markdown and the scaffold's own lines are the course's."""
    given = given or {}
    parts = []
    for cell in _cells(notebook):
        if cell.get("cell_type") != "code":
            continue
        role = cells.nbgrader(cell)
        if role and not cells.is_solution(cell):
            continue
        source = _source(cell)
        if role and cells.grade_id(cell) in given:
            source = _new_lines(given[cells.grade_id(cell)], source)
        if source.strip():
            parts.append(source.rstrip() + "\n")
    return "\n".join(parts)


def _cells(notebook) -> list:
    found = notebook.get("cells", []) if isinstance(notebook, dict) else notebook.cells
    return [c for c in found if isinstance(c, dict)]


def _new_lines(released: str, written: str) -> str:
    """The lines of ``written`` that are not the released cell's (what replaced the TODO, and anything added)."""
    old, new = released.splitlines(), written.splitlines()
    kept = []
    for tag, _, _, start, end in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            kept += new[start:end]
    return "\n".join(kept)


def given_code(course, assignment: str) -> dict[str, str]:
    """The released answer cells of an assignment (the scaffold around each TODO), by grade_id."""
    return {cells.grade_id(c): str(c.source) for c in course.read_release(assignment).cells
            if c.get("cell_type") == "code" and cells.is_solution(c)}


def course_code(course, assignment: str) -> list[str]:
    """The boilerplate of an assignment: the instructor's solution, as a learner's own code would hold it."""
    return [own_code(course.read_source(assignment), given_code(course, assignment))]


def read_class(out: Path, course) -> dict[str, list[Code]]:
    """Every learner's own code, by assignment, from ``{out}/autograded`` (an unreadable notebook is left out)."""
    by_assignment: dict[str, list[Code]] = defaultdict(list)
    known = set(course.assignments())
    given = {assignment: given_code(course, assignment) for assignment in known}
    root = out / "autograded"
    for path in sorted(root.glob("*/*/*.ipynb")) if root.is_dir() else []:
        student, assignment = path.parent.parent.name, path.parent.name
        if assignment not in known:
            continue
        try:  # the grader wrote it (nbformat 4, sizes bounded by intake); plain JSON: no schema validation to pay
            if path.stat().st_size > MAX_NOTEBOOK_BYTES:
                continue
            notebook = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
                continue
        except (OSError, ValueError):  # unreadable: simply not compared
            continue
        by_assignment[assignment].append(Code(student, assignment, path.name, own_code(notebook, given[assignment]),
                                               answer_cells(notebook)))
    return by_assignment


@dataclass
class Fingerprint:
    """A learner's code fingerprinted in normal form: what copydetect's ``compare_files`` reads (``k``,
    ``filtered_code``, ``offsets``, ``hashes``, ``hash_idx``, ``token_coverage``), and the form, whose statements
    map a shared passage back to the learner's own text."""

    k: int
    filtered_code: str
    offsets: np.ndarray
    hashes: set[int]
    hash_idx: dict[int, list[int]]
    token_coverage: float
    form: Form


def _fingerprint(text: str, boilerplate) -> Fingerprint:
    """copydetect's fingerprint (its filter, k-grams of ``NOISE_T`` characters of the filtered code, winnowed in
    windows that guarantee a match of ``GUARANTEE_T``) of ``text``'s normal form, with a hash that is the same in every
    process; fingerprints in ``boilerplate`` left out."""
    from copydetect.utils import get_token_coverage

    form = normal_form(text)
    filtered, offsets = _filter(form.text)
    every = _kgram_hashes(filtered, NOISE_T)
    where = _winnow(every, GUARANTEE_T - NOISE_T + 1)
    hashes = every[where]
    if len(boilerplate) and len(hashes):
        kept = ~np.isin(hashes, np.asarray(boilerplate, dtype=np.int64))
        hashes, where = hashes[kept], where[kept]
    hash_idx: dict[int, list[int]] = defaultdict(list)
    for value, index in zip(hashes.tolist(), where.tolist()):
        hash_idx[value].append(index)
    hash_idx = dict(hash_idx)
    return Fingerprint(NOISE_T, filtered, offsets, set(hash_idx), hash_idx,
                       get_token_coverage(hash_idx, NOISE_T, len(filtered)), form)


def _filter(code: str) -> tuple[str, np.ndarray]:
    """copydetect's ``filter_code`` for Python: names V, function names F, class names O, a string's text S,
    layout and comments dropped; with the offsets that map the filtered code back to ``code``. One lexer, and each
    token type classified once (looking the lexer up by file name, and the token types up, was a fifth of the cost)."""
    global _LEXER
    if _LEXER is None:
        from pygments.lexers.python import PythonLexer

        _LEXER = PythonLexer()
    out, offsets, offset, length = [], [[0, 0]], 0, 0
    for ttype, value in _LEXER.get_tokens(code):
        kind = _KINDS.get(ttype) or _KINDS.setdefault(ttype, _kind(ttype))
        if kind == "keep" or kind == "S" and value in ("'", '"'):
            value = '"' if kind == "S" else value
            out.append(value)
            length += len(value)
        elif kind == "drop":
            offsets.append([length - 1, offset])
            offset += len(value)
        else:
            out.append(kind)
            length += 1
            offsets.append([length - 1, offset])
            offset += len(value) - 1
    return "".join(out), np.array(offsets)


_LEXER = None
_KINDS: dict = {}


def _kind(ttype) -> str:
    """What copydetect's filter makes of a token of this type: a letter, "drop", or "keep" (as written)."""
    from pygments import token

    if ttype in (token.Name, token.Name.Variable, token.Name.Attribute):
        return "V"
    if ttype in token.Name.Function:
        return "F"
    if ttype in token.Name.Class:
        return "O"
    if ttype == token.Comment.Preproc or ttype == token.Comment.Hashbang:
        return "P"
    if ttype in token.Text or ttype in token.Comment:
        return "drop"
    return "S" if ttype in token.Literal.String else "keep"


def _kgram_hashes(filtered: str, k: int) -> np.ndarray:
    """The hash of every k characters of ``filtered``, from its code points alone (never ``hash()``, which
    ``PYTHONHASHSEED`` changes from run to run)."""
    codes = np.frombuffer(filtered.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    if len(codes) < k:
        return np.zeros(0, dtype=np.int64)
    value = np.lib.stride_tricks.sliding_window_view(codes, k) @ _POWERS  # wraps mod 2**64
    value ^= value >> _MIX[0]
    value *= _MIX[1]
    value ^= value >> _MIX[2]
    value *= _MIX[3]
    value ^= value >> _MIX[4]
    return (value >> np.uint64(11)).astype(np.int64)


def _winnow(hashes: np.ndarray, window: int) -> np.ndarray:
    """Winnowing: the positions of each window's least hash (the rightmost of equals), each once, in order."""
    if len(hashes) == 0:
        return np.zeros(0, dtype=np.int64)
    window = min(window, len(hashes))
    views = np.lib.stride_tricks.sliding_window_view(hashes, window)
    return np.unique(np.arange(len(views)) + (window - 1 - np.argmin(views[:, ::-1], axis=1)))


def _fingerprints(texts: list[str], boilerplate) -> list:
    """Each distinct text fingerprinted once (a class hands in many identical answers), on every core for a large
    class: tokenizing is most of the section's cost."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        made = [_fingerprint(text, boilerplate) for text in distinct]
    else:
        with concurrent.futures.ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("spawn")) \
                as pool:
            made = list(pool.map(_fingerprint, distinct, itertools.repeat(boilerplate), chunksize=50))
    by_text = dict(zip(distinct, made))
    return [by_text[text] for text in texts]


def similar_pairs(codes: list[Code], boilerplate_code: list[str], *, threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of ``codes`` (one assignment) that share at least ``threshold`` of one learner's code, most similar
    first; identical code (after the fingerprints' normalisation) first of all."""
    from copydetect import compare_files

    boilerplate = sorted({h for text in boilerplate_code for h in _fingerprint(text, []).hashes})
    prints = dict(enumerate(_fingerprints([code.text for code in codes], boilerplate)))
    prints = {i: p for i, p in prints.items() if p.hashes}  # a blank notebook, or the solution: nothing of its own
    holders: dict[int, list[int]] = defaultdict(list)
    for i, p in prints.items():
        for h in sorted(p.hashes):
            holders[h].append(i)
    common = max(COMMON_MIN, int(COMMON_SHARE * len(prints)))
    shared: Counter = Counter()
    for owners in holders.values():
        if 1 < len(owners) <= common:
            shared.update(itertools.combinations(owners, 2))
    # The same fingerprints (an unchanged or renamed copy, after the normal form): always a candidate, however common
    # each fingerprint is in a class whose code is uniform (there the rare ones above can be too few to count).
    alike: dict[tuple, list[int]] = defaultdict(list)
    for i, p in prints.items():
        alike[tuple(sorted(p.hashes))].append(i)
    for group in alike.values():
        for i, j in itertools.combinations(group, 2):
            shared[(i, j)] = max(shared[(i, j)], len(prints[i].hashes))
    pairs = []
    for (i, j), count in shared.items():
        if count / min(len(prints[i].hashes), len(prints[j].hashes)) < threshold / 2:
            continue  # too few fingerprints in common for either share to reach the threshold
        overlap, shares, slices = compare_files(prints[i], prints[j])
        if max(shares) < threshold or overlap < MIN_TOKENS:
            continue
        same = _plain(codes[i].cells or codes[i].text) == _plain(codes[j].cells or codes[j].text)
        pairs.append(Pair(codes[i].assignment, codes[i], codes[j], (float(shares[0]), float(shares[1])), same,
                          (_marks(prints[i].form, slices[0]), _marks(prints[j].form, slices[1]))))
    return sorted(pairs, key=lambda p: (not p.identical, -p.score, p.first.student, p.second.student))


def _marks(form: Form, slices) -> list[tuple[int, int]]:
    """The passages of the learner's own text that the shared slices of its normal form came from, merged."""
    spans = sorted(form.original(int(start), int(end)) for start, end in zip(slices[0].tolist(), slices[1].tolist()))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def _plain(text: str) -> str:
    """Code as a kernel runs it, less blank lines and trailing spaces."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def find(out: Path, course, *, threshold: float = THRESHOLD) -> list[Pair]:
    """Every listed pair of the class graded into ``out``, assignment by assignment."""
    pairs = []
    for assignment, codes in read_class(out, course).items():
        pairs += similar_pairs(codes, course_code(course, assignment), threshold=threshold)
    return pairs
