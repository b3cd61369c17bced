"""A folder that holds a term's records says so (``TERM.json``), and what would replace or delete records refuses it.

The course's own commands were the danger: ``make demo`` regrades its output folder with ``--force``, ``make
clean-grading`` deleted the history and the hand grades with the graded notebooks. A term's folder is marked when it
starts (``python -m grader term init DIR``; the hub marks its course folder, ``serve`` the folder it grades into), and
``make demo``, ``make samples`` and ``make clean-grading`` ask ``guard`` first. A folder nobody marked is refused too
when it holds records of anyone but the demo's sample learners: those are real learners' grades all the same.
"""
from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from grader.term import records

MARK = records.MARK


class TermRefused(RuntimeError):
    """A command that would replace or delete a term's records, refused with what to do instead."""


def mark(out: Path, name: str, by: str = "term init") -> dict:
    """Mark ``out`` as the folder of the term ``name`` (kept if it is marked already); the mark's content."""
    out.mkdir(parents=True, exist_ok=True)
    found = marked(out)
    if found is not None:
        return found
    content = {"term": name, "marked": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "by": by}
    temporary = out / f".{MARK}.{os.getpid()}"
    temporary.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, out / MARK)
    return content


def marked(out: Path) -> dict | None:
    """The term mark of ``out``, or None; a mark that cannot be read still marks the folder."""
    path = out / MARK
    if not path.exists() and not path.is_symlink():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        return content if isinstance(content, dict) else {"term": "?"}
    except (OSError, ValueError):
        return {"term": "? (its TERM.json cannot be read)"}


def check(out: Path, action: str, demo_learners: set[str] = frozenset()) -> None:
    """Raise TermRefused when ``action`` (``demo``, ``samples`` or ``clean``) must not touch ``out``."""
    term = marked(out)
    if term is not None:
        raise TermRefused(
            f"{out.resolve()} holds the records of the term {term.get('term', '?')!r} (marked {term.get('marked', '?')} "
            f"by {term.get('by', '?')}): {_WHAT[action]} would {_HARM[action]}. Run it on another folder "
            f"({_ELSEWHERE[action]}); to keep a copy of the term first: python -m grader term backup --out {out} "
            "--to FILE.tar.gz")
    held = ({p.name for p in out.iterdir() if p.is_dir()} if out.is_dir() else set()) if action == "samples" \
        else records.learners(out)
    others = sorted(held - set(demo_learners))
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise TermRefused(
            f"{out.resolve()} holds grading records of learners who are not the demo's ({shown}): {_WHAT[action]} "
            f"would {_HARM[action]}. If this is a term, mark it (python -m grader term init --out {out} --name NAME) "
            f"and run the demo elsewhere ({_ELSEWHERE[action]})")


_WHAT = {"demo": "make demo", "clean": "make clean-grading", "samples": "make samples"}
_HARM = {"demo": "regrade them with --force and replace their grades and feedback",
         "clean": "delete graded notebooks, results and feedback pages that their grades depend on",
         "samples": "rebuild the sample class over their work"}
_ELSEWHERE = {"demo": "make demo GRADING=demo-out", "clean": "make clean-grading GRADING=demo-out",
              "samples": "collected work belongs in the course's submitted/ folder, never in samples/"}
