"""What the class report's similar-answers section costs for a class of 1,000 (issue: at most 30 s of the report).

    .venv/bin/python benchmarks/similarity_cost.py [--learners 1000]

A synthetic class, assignment by assignment: each learner's own code is, for every TODO of the lesson, a few lines
of their own (calls and names drawn at random), and a helper or two; a handful of learners hand in
a classmate's code unchanged, and as many with the names changed. Prints the seconds ``similarity.similar_pairs``
takes per assignment, how many of the planted copies it lists, and then the whole section as the report runs it
(``similarity.find``: every learner's autograded notebook read from disk, written here as the released notebook with
the learner's code in its first answer cell).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import cells
from grader.classroom.similarity import Code, course_code, find, similar_pairs
from grader.layout import Course

FUNCTIONS = ["np.sum", "np.mean", "np.max", "np.min", "np.abs", "np.sqrt", "np.exp", "np.log1p", "np.cumsum", "len",
             "np.sort", "np.diff", "np.square", "np.median", "float", "np.asarray", "np.ravel", "np.std", "np.var",
             "np.argmax", "np.argmin", "np.prod", "np.floor", "np.ceil", "np.round", "np.tanh", "np.sign", "sorted"]
NAMES = ["values", "total", "count", "parts", "acc", "result", "shards", "local", "grads", "items", "tmp", "out",
         "mask", "sizes", "weights", "step", "block", "row", "col", "scale"]
OPERATORS = ["+", "-", "*", "/"]


def statement(rng: random.Random, known: list[str]) -> str:
    """One line a learner might write: a name bound to a call on names already bound, combined with another."""
    target = rng.choice(NAMES)
    line = (f"{target} = {rng.choice(FUNCTIONS)}({rng.choice(known)}) {rng.choice(OPERATORS)} "
            f"{rng.choice(FUNCTIONS)}({rng.choice(known)})")
    known.append(target)
    return line


def learner(rng: random.Random, todos: int, index: int) -> str:
    """Each TODO answered in 3 to 6 lines of the learner's own, and a helper or two."""
    pieces = []
    for todo in range(todos):
        known = [rng.choice(NAMES)]
        body = [statement(rng, known) for _ in range(rng.randint(3, 6))]
        pieces.append(f"def answer_{todo}({known[0]}):\n" + "".join(f"    {line}\n" for line in body)
                      + f"    return {known[-1]}\n")
    for k in range(rng.randint(0, 2)):
        known = ["items"]
        pieces.append(f"def helper_{index}_{k}(items):\n    {statement(rng, known)}\n    return {known[-1]}\n")
    return "\n".join(pieces)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=1000)
    args = parser.parse_args()
    course, total, classes = Course.default(), 0.0, {}
    for assignment in course.assignments():
        boilerplate = course_code(course, assignment)
        todos = boilerplate[0].count("### BEGIN SOLUTION")
        rng = random.Random(assignment)
        codes = [Code(f"learner-{i}", assignment, f"{assignment}.ipynb", learner(rng, todos, i))
                 for i in range(args.learners)]
        planted = set()
        for k in range(5):  # a classmate's code unchanged, and with its names changed
            codes[10 * k] = Code(codes[10 * k].student, assignment, codes[10 * k].notebook, codes[10 * k + 1].text)
            renamed = codes[10 * k + 3].text.replace("def answer_", "def solved_")
            for old, new in zip(NAMES, NAMES[1:] + NAMES[:1]):
                renamed = renamed.replace(old, new.upper())
            codes[10 * k + 2] = Code(codes[10 * k + 2].student, assignment, codes[10 * k + 2].notebook, renamed)
            planted |= {(codes[10 * k].student, codes[10 * k + 1].student),
                        (codes[10 * k + 2].student, codes[10 * k + 3].student)}
        classes[assignment] = codes
        started = time.perf_counter()
        pairs = similar_pairs(codes, boilerplate)
        seconds = time.perf_counter() - started
        total += seconds
        found = {tuple(sorted((p.first.student, p.second.student))) for p in pairs}
        caught = sum(tuple(sorted(pair)) in found for pair in planted)
        print(f"{assignment}: {args.learners} learners, {todos} TODOs: {seconds:.1f} s, {len(pairs)} pairs listed, "
              f"{caught} of {len(planted)} planted copies among them")
    print(f"all assignments: {total:.1f} s")
    with tempfile.TemporaryDirectory() as out:
        for assignment, codes in classes.items():
            released = json.loads(course.release_notebook(assignment).read_text())
            first = next(i for i, c in enumerate(released["cells"]) if c["cell_type"] == "code" and cells.is_solution(c))
            for code in codes:
                released["cells"][first]["source"] = code.text
                folder = Path(out) / "autograded" / code.student / assignment
                folder.mkdir(parents=True)
                (folder / code.notebook).write_text(json.dumps(released))
        started = time.perf_counter()
        pairs = find(Path(out), course)
        print(f"the report's section, notebooks read from disk: {time.perf_counter() - started:.1f} s, "
              f"{len(pairs)} pairs listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
