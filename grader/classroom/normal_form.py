"""The form in which the class report compares learners' code (``grader.classroom.similarity``): what it does, not
how it is dressed.

Winnowed k-grams see a copy through renamed names and re-flowed lines, but not through statements that do nothing
put between the copied ones: ``; pass`` after every statement, or a ``pass``, ``...`` or docstring line after each,
leaves no k-gram of the original whole. So the code is compared in a normal form. It is parsed (own code is often a
fragment of a function body, or several: re-indented until it parses, a line that never does kept as written), and
each statement is written once more by ``ast.unparse``, one a line: semicolons, comments, layout and redundant
parentheses are gone. Statements that do nothing are left out: ``pass``; an expression statement that is a constant
(a docstring, ``...``) or a bare name; ``x = x`` (``a, b = a, b``); ``x += 0``, ``x -= 0``, ``x *= 1``, ``x /= 1``,
``x **= 1``; an annotation with no value; ``del`` of names. ``if`` on a constant is folded to the branch that runs,
``while`` on a false constant to its ``else``; an ``else`` or ``finally`` left empty is left out. The names are
canonicalised afterwards, by copydetect's filter as before. Each statement of the form keeps the span of the
learner's text it came from, so the passages two learners share are marked on what each of them wrote.
"""
from __future__ import annotations

import ast
import bisect
import copy
import io
import re
import tokenize
from dataclasses import dataclass

#: a fragment that does not parse: at most this many of its lines re-opened or set apart, then it is kept as written
MAX_REPAIRS = 40
_BREAK = re.compile(r"\r\n|\r|\n")
_WORD = re.compile(r"[ \t\f]*([A-Za-z_]+)")
_BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases")
_INDENT = "    "


@dataclass(frozen=True)
class Form:
    """A learner's code in normal form: one statement (or a compound statement's header) a line."""

    text: str
    starts: tuple[int, ...]  # where each statement begins in ``text``
    spans: tuple[tuple[int, int], ...]  # the characters of the learner's text it came from

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The learner's text that ``text[start:end]`` came from: the statements it touches, whole."""
        if not self.starts or end <= start:
            return 0, 0
        first = max(0, bisect.bisect_right(self.starts, start) - 1)
        last = max(first, bisect.bisect_right(self.starts, end - 1) - 1)
        return self.spans[first][0], max(span[1] for span in self.spans[first:last + 1])


def normal_form(text: str) -> Form:
    """``text`` (a learner's own code) in normal form; code that does not parse at all is kept as written."""
    rows = _BREAK.split(text)
    row_starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    parsed = _parse(rows)
    if parsed is None:
        return Form(text, (0,), ((0, len(text)),)) if text.strip() else Form("", (), ())
    tree, source, origin, raw = parsed
    pieces = _Pieces(source, origin, row_starts, text)
    pieces.block(tree.body)
    for first, last, _ in raw:  # lines that never parsed: as written
        lead = len(rows[first]) - len(rows[first].lstrip(" \t\f"))
        pieces.found.append((row_starts[first] + lead, row_starts[last] + len(rows[last]),
                             "\n".join(rows[first:last + 1]).strip()))
    pieces.found.sort(key=lambda piece: piece[0])  # stable: a header stays before what it opens
    starts, at = [], 0
    for _, _, line in pieces.found:
        starts.append(at)
        at += len(line) + 1
    return Form("\n".join(line for _, _, line in pieces.found), tuple(starts),
                tuple((start, end) for start, end, _ in pieces.found))


def _parse(rows: list[str]):
    """(tree, the rows parsed, where each came from: (row of ``rows``, columns to add) or None where the row was
    added, the logical lines kept as written); None if nothing parses."""
    indents = [row[:len(row) - len(row.lstrip(" \t"))] for row in rows if row.strip()]
    margin = min(indents, key=len) if indents else ""
    if not all(indent.startswith(margin) for indent in indents):
        margin = ""
    source = [row[len(margin):] if row.strip() else "" for row in rows]
    try:  # a whole cell, or a fragment of one function body: parses as it is, its common indentation removed
        return ast.parse("\n".join(source)), source, [(i, len(margin)) for i in range(len(rows))], []
    except (SyntaxError, ValueError):
        pass
    lines = _logical_lines(rows)
    modes = ["code"] * len(lines)  # or "opened": a made-up try/if before an orphan else/except; "raw": as written
    for _ in range(MAX_REPAIRS):
        source, origin, owner = _rebuild(rows, lines, modes)
        try:
            return ast.parse("\n".join(source)), source, origin, [line for line, m in zip(lines, modes) if m == "raw"]
        except ValueError:  # a null byte: nowhere to point at
            return None
        except SyntaxError as error:
            at = min(max((error.lineno or len(owner)) - 1, 0), len(owner) - 1) if owner else 0
            culprit = next((owner[r] for r in range(at, -1, -1) if owner[r] is not None),
                           next((o for o in owner if o is not None), None))
            if culprit is None or modes[culprit] == "raw":
                return None
            word = _WORD.match(rows[lines[culprit][0]])
            orphan = word and word.group(1) in {"else", "elif", "except", "finally"}
            modes[culprit] = "opened" if orphan and modes[culprit] == "code" else "raw"
    return None


def _logical_lines(rows: list[str]) -> list[tuple[int, int, bool]]:
    """(first row, last row, opens a block) of each logical line of ``rows``; blank and comment lines left out.
    The rows are tokenized without their indentation, which a fragment may not have consistent."""
    flat = "\n".join(row.lstrip(" \t\f") for row in rows) + "\n"
    found, start, last = [], None, None
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        for token in tokenize.generate_tokens(io.StringIO(flat).readline):
            if token.type == tokenize.NEWLINE:
                if start is not None:
                    found.append((start, min(token.start[0] - 1, len(rows) - 1), last == ":"))
                start = None
            elif token.type not in skip:
                start = token.start[0] - 1 if start is None else start
                last = token.string if token.type == tokenize.OP else None
    except (tokenize.TokenError, SyntaxError):  # an unclosed bracket or string: the rest is one line
        if start is not None:
            found.append((start, len(rows) - 1, False))
    return found


def _rebuild(rows: list[str], lines: list[tuple[int, int, bool]], modes: list[str]):
    """The logical lines re-indented so that their blocks nest: a line opens a block only when the next is indented
    deeper, a block the fragment leaves empty gets a ``pass``, an unexpected indent stays at the level it is in."""
    source, origin, owner = [], [], []

    def put(text: str, level: int, where, line) -> None:
        source.append(_INDENT * level + text)
        origin.append(where)
        owner.append(line)

    stack, expect, opener = [(-1, 0)], False, (-1, 0)  # (the learner's indentation width, level)
    for i, ((first, last, opens), mode) in enumerate(zip(lines, modes)):
        body = rows[first].lstrip(" \t\f")
        lead = rows[first][:len(rows[first]) - len(body)]
        width = len(lead.expandtabs(8))
        if expect and width > opener[0]:
            stack.append((width, opener[1] + 1))
        else:
            if expect:
                put("pass", opener[1] + 1, None, None)
            while len(stack) > 1 and width < stack[-1][0]:
                stack.pop()
        level = stack[-1][1]
        if mode == "opened":
            put("if 0:" if body.startswith(("else", "elif")) else "try:", level, None, None)
            put("pass", level + 1, None, None)
        if mode == "raw":
            put("if 1:" if opens else "pass", level, None, i)  # what it opens still parses, and is folded in
        else:
            put(body, level, (first, len(lead) - len(_INDENT) * level), i)
            for row in range(first + 1, last + 1):
                source.append(rows[row])
                origin.append((row, 0))
                owner.append(i)
        expect, opener = opens, (width, level)
    if expect:
        put("pass", opener[1] + 1, None, None)
    return source, origin, owner


class _Pieces:
    """The statements of a tree in normal form, each with the span of the learner's text it came from."""

    def __init__(self, source: list[str], origin: list, row_starts: list[int], text: str):
        self.source, self.origin, self.row_starts, self.text = source, origin, row_starts, text
        self.found: list[tuple[int, int, str]] = []

    def at(self, row: int, col: int) -> int | None:
        """The learner's character offset of a node's (row, UTF-8 column); None on a row the parse added."""
        where = self.origin[row - 1] if 0 < row <= len(self.origin) else None
        if where is None:
            return None
        line = self.source[row - 1]
        chars = col if line.isascii() else len(line.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "ignore"))
        return self.row_starts[where[0]] + chars + where[1]

    def start(self, node) -> int | None:
        first = min([node] + list(getattr(node, "decorator_list", [])), key=lambda n: (n.lineno, n.col_offset))
        return self.at(first.lineno, max(0, first.col_offset - (first is not node)))

    def end(self, node) -> int | None:
        return self.at(node.end_lineno, node.end_col_offset)

    def add(self, text: str, start: int | None, end: int | None) -> None:
        if start is None:  # a statement the parse added (an opener of an orphan else) is not the learner's
            return
        if end is None:  # a header whose block the fragment left empty: its row
            row_end = _BREAK.search(self.text, start)
            end = row_end.start() if row_end else len(self.text)
        self.found.append((start, max(start, end), text))

    def block(self, body: list) -> None:
        for node in body:
            self.statement(node)

    def statement(self, node) -> None:
        if _does_nothing(node):
            return
        if isinstance(node, (ast.If, ast.While)):
            truth = _constant(node.test)
            if truth is not None and (isinstance(node, ast.If) or not truth):  # `while True:` does something
                self.block(node.body if truth else node.orelse)
                return
        if isinstance(node, ast.Match):
            self.add(_header(node), self.start(node), self.start(node.cases[0].pattern))
            for case in node.cases:
                self.add(_header(case), self.start(case.pattern), self._opening(case))
                self.block(case.body)
            return
        if not isinstance(getattr(node, "body", None), list):
            self.add(ast.unparse(node), self.start(node), self.end(node))
            return
        self.add(_header(node), self.start(node), self._opening(node))
        self.block(node.body)
        for handler in getattr(node, "handlers", []):
            self.add(_header(handler), self.start(handler), self._opening(handler))
            self.block(handler.body)
        for name, keyword in (("orelse", "else:"), ("finalbody", "finally:")):
            mark = len(self.found)
            self.block(getattr(node, name, []))
            if len(self.found) > mark:  # an else or finally with nothing left in it is left out
                self.found.insert(mark, (self.found[mark][0], self.found[mark][0], keyword))

    def _opening(self, node) -> int | None:
        """Where a compound statement's header ends: its first statement (or, with none, the statement's end)."""
        return self.start(node.body[0]) if node.body else self.end(node)


def _header(node) -> str:
    """A compound statement's header as ``ast.unparse`` writes it (decorators included)."""
    blank = copy.copy(node)
    for name in _BLOCKS:
        if hasattr(blank, name):
            setattr(blank, name, [])
    return ast.unparse(blank)


def _does_nothing(node) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr):  # a docstring, `...`, a number, a name
        return isinstance(node.value, (ast.Constant, ast.Name))
    if isinstance(node, ast.Assign):
        return all(_same_names(target, node.value) for target in node.targets)
    if isinstance(node, ast.AugAssign):
        value = node.value.value if isinstance(node.value, ast.Constant) else None
        if type(value) not in (int, float):
            return False
        return (value == 0 and isinstance(node.op, (ast.Add, ast.Sub))
                or value == 1 and isinstance(node.op, (ast.Mult, ast.Div, ast.Pow)))
    if isinstance(node, ast.AnnAssign):
        return node.value is None and isinstance(node.target, ast.Name)
    if isinstance(node, ast.Delete):
        return all(isinstance(target, ast.Name) for target in node.targets)
    return False


def _same_names(target, value) -> bool:
    """``target = value`` rebinds names to themselves: ``x = x``, ``a, b = a, b``."""
    if isinstance(target, ast.Name) and isinstance(value, ast.Name):
        return target.id == value.id
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        return len(target.elts) == len(value.elts) and all(map(_same_names, target.elts, value.elts))
    return False


def _constant(test) -> bool | None:
    """The truth of an ``if``/``while`` test that is a constant (``True``, ``0``, ``not 1``); None otherwise."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _constant(test.operand)
        return None if inner is None else not inner
    return None
