"""The one rule for identifiers a learner chooses (student ids, assignment and notebook names), and the one way
any text a learner writes is shown in an instructor's record.

A learner picks their own student id (``nbgrader submit --student ID``; ``collect``'s owner check only warns;
the exchange inbound is writable by every learner) and names the folders and files of their submission. These
names travel into ``grades.csv``, nbgrader's ``gradebook.db``, formgrader's pages, file paths and shell commands
that formgrader shows, so they are checked once, at intake, before anything stores them.

What nbgrader itself accepts: any string for a student id (its gradebook column holds 128 characters; its
``CourseDirectory`` only strips surrounding spaces), and any assignment name without ``+`` (the exchange's
field separator). formgrader then prints these values into HTML and into inline ``<script>`` blocks without
escaping, and globs ``submitted/{student_id}/{assignment_id}``, so an id with ``<``, quotes, ``=``, ``(``,
``*`` or ``[`` is markup, code or a pattern there.

The course's rule is tighter, :func:`problem` checks it: **1 to 100 characters, letters and decimal digits of
any script (Unicode categories L* and Nd, in NFC form), ``_``, ``-``, ``.``, ``@`` and inner spaces; the first
character a letter, a digit or ``_``; the last not a space.** It accepts every id of the sample roster and the
tests (``ada``, ``corpus-wrong-divide-by-four``, ``josé``, ``Ann Lee``, e-mail addresses) and refuses every
character that means something in HTML, JavaScript, CSS, URLs, shells, globs or nbgrader's exchange names
(``<>&"'`=()[]{}*?/\\+%#;:!$|~^,``), every control and formatting character (bidirectional overrides, zero
width spaces), combining marks outside NFC (so two spellings of one name cannot be two ids), and a leading
``.`` or ``-`` (a hidden folder, a command-line option). Letters of other scripts are kept on purpose, for
learners' real names; they can look like Latin ones (Cyrillic ``а``), which the rule does not judge. The
pages that show ids escape them as well (``lab/instructor/templates/``, ``grader/nbgrader_adapter/formgrader_guard.py``): the
rule keeps markup out of the gradebook, escaping keeps whatever an older gradebook or a stock nbgrader
command stored from becoming markup.

**Text a learner writes, in an instructor's record** (:func:`learner_text`): a regrade reason, a folder's name, a
message that quotes the learner's notebook. Records keep it as it was written (JSON lines, escaped as JSON); every
line-based record, listing and log that shows it renders it through ``learner_text``: one line (every control
character, ``\\r``, ``\\n``, ``\\t``, terminal escapes, Unicode line and paragraph separators, bidirectional and
other format characters escaped as Python writes them), cut at a length, in double quotes (a quote or backslash in
it escaped) and marked ``learner wrote: "..."``, so it can never begin a line of its own nor pass for the record's
words. Text of the grader's own that may carry a learner's part (a test's message) goes through
:func:`escape_controls`: one line, unmarked.
"""
from __future__ import annotations

import unicodedata

MAX_CHARS = 100  # under nbgrader's 128-character column; the course's longest id is about 55
_PUNCTUATION = frozenset("_-.@")
_LETTERS_AND_DIGITS = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd"})
#: letters that render as nothing (Unicode's default-ignorable letters: the Hangul fillers, Khmer's inherent
#: vowels): an id ending in one looks exactly like another learner's, and one made of them looks empty
_INVISIBLE = frozenset("\u115f\u1160\u17b4\u17b5\u3164\uffa0")

RULE = (f"1 to {MAX_CHARS} characters: letters, digits, '_', '-', '.', '@' and inner spaces, "
        "starting with a letter, a digit or '_'")


def _allowed(char: str) -> bool:
    return char in _PUNCTUATION or char == " " or (unicodedata.category(char) in _LETTERS_AND_DIGITS
                                                   and char not in _INVISIBLE)


def problem(name: str) -> str | None:
    """Why ``name`` is not a usable identifier (one short clause), or None when it is."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    if len(name) > MAX_CHARS:
        return f"it has {len(name)} characters, over {MAX_CHARS}"
    refused = sorted({c for c in name if not _allowed(c)})
    if refused:
        shown = ", ".join(repr(c) if c.isprintable() and c not in _INVISIBLE else f"U+{ord(c):04X}"
                          for c in refused[:8])
        return f"it contains {shown}" + (", ..." if len(refused) > 8 else "")
    if unicodedata.normalize("NFC", name) != name:
        return "it is not in Unicode NFC form"
    if not (name[0] == "_" or unicodedata.category(name[0]) in _LETTERS_AND_DIGITS):
        return f"it starts with {name[0]!r}"
    if name[-1] == " ":
        return "it ends with a space"
    return None


def valid(name: str) -> bool:
    """Whether ``name`` follows the course's identifier rule (module docstring)."""
    return problem(name) is None


def refusal(kind: str, shown: str, name: str) -> str:
    """The message for a refused ``name`` (``shown``: it as the grader prints it), naming the rule."""
    return f"{shown!r} is not a usable {kind} ({problem(name)}; the rule: {RULE})"


#: how much of a learner's text one line of a record shows (the record itself keeps all of it)
SHOWN_CHARS = 300


def escape_controls(text: str) -> str:
    """``text`` on one line: every unprintable character (control characters with ``\\r``, ``\\n``, ``\\t`` and ESC,
    line and paragraph separators, bidirectional and other format characters, lone surrogates) escaped as Python
    would write it (``\\n``, ``\\x1b``, ``\\u2028``, ``\\u202e``)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def learner_text(text: object, *, limit: int = SHOWN_CHARS, label: str = "learner wrote") -> str:
    """Text a learner controls, for one line of an instructor's record, listing or log: ``learner wrote: "..."``.

    In double quotes, with a quote or backslash in it escaped (so the text cannot close the quotes and go on as the
    record's own words) and every unprintable character escaped (:func:`escape_controls`: it cannot begin a line,
    move the cursor, recolour or reorder the terminal); at most ``limit`` characters of it, the rest counted.
    Distinct texts stay distinct as shown (up to the cut). ``label``: what it is (``learner's folder``)."""
    text = str(text)
    cut = text[:limit]
    shown = escape_controls(cut.replace("\\", "\\\\").replace('"', '\\"'))
    more = f" (+{len(text) - len(cut)} more characters)" if len(text) > len(cut) else ""
    return f'{label}: "{shown}"{more}'
