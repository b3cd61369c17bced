"""Similar answers (``grader.classroom.similarity``), called on answer code directly: a copy is paired with its
original through statements that do nothing (``; pass`` after every statement, a ``pass`` line after each,
docstrings and ``...``, ``x = x``, ``if True:`` around each), renamed or not; honest different answers stay apart;
and the shares are the same whatever Python's hash seed (``PYTHONHASHSEED``)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom import similarity
from grader.classroom.normal_form import normal_form

ROOT = Path(__file__).resolve().parent.parent

# a learner's own code as the report holds it: the lines written into the released `def two_averages(shards):`
ORIGINAL = '''    every_value = np.concatenate(shards)
    weighted = float(every_value.sum() / every_value.size)
    per_shard = []
    for shard in shards:
        per_shard.append(float(shard.sum() / shard.size))
    unweighted = float(sum(per_shard) / len(per_shard))
    print("checking", len(shards), "shards:", weighted, unweighted)
    return weighted, unweighted
'''
# and a cell the learner added, whole
HELPER = '''def spread(values, scale=2.0):
    centre = float(np.mean(values))
    distances = [abs(v - centre) for v in values]
    total = 0.0
    for d in distances:
        total += d * scale
    return total / len(values), centre
'''
RENAMES = {"every_value": "values", "unweighted": "m", "weighted": "g", "per_shard": "locals_", "shard": "block",
           "distances": "gaps", "centre": "middle", "total": "acc", "spread": "dispersion"}
OTHERS = ['''    counts = [len(s) for s in shards]
    sums = [float(np.sum(s)) for s in shards]
    if not counts or min(counts) == 0:
        raise ValueError("every shard needs a value")
    return sum(sums) / sum(counts), float(np.mean([t / c for t, c in zip(sums, counts)]))
''', '''    flat = np.concatenate([np.asarray(s, dtype=np.float64) for s in shards])
    local_means = np.array([np.asarray(s, dtype=np.float64).mean() for s in shards])
    assert flat.size > 0
    return float(flat.mean()), float(local_means.mean())
''', '''    total, count, means = 0.0, 0, []
    for s in shards:
        total = total + float(np.sum(s))
        count = count + len(s)
        means.append(float(np.sum(s)) / len(s))
    return total / count, sum(means) / len(means)
''']
# a copy with one line of its own: shares below 1, so which fingerprints winnowing keeps shows in them
EDITED = ORIGINAL.replace('''    per_shard = []
    for shard in shards:
        per_shard.append(float(shard.sum() / shard.size))
''', '''    per_shard = [float(np.mean(s)) for s in shards]
''')


def _statements(text: str):
    """(indentation, statement, opens a block) of each line of ``text`` (one statement a line)."""
    for line in text.splitlines():
        if line.strip():
            stripped = line.strip()
            yield line[:len(line) - len(line.lstrip())], stripped, stripped.endswith(":")


def semicolon_pass(text: str) -> str:
    return "\n".join(f"{pad}{s}" if opens else f"{pad}{s}; pass" for pad, s, opens in _statements(text)) + "\n"


def pass_lines(text: str) -> str:
    return "".join(f"{pad}{s}\n" if opens else f"{pad}{s}\n{pad}pass\n" for pad, s, opens in _statements(text))


def docstrings_and_ellipses(text: str) -> str:
    fillers = ['"""Keep the shapes straight."""', "...", "'''(see the lesson)'''", "0"]
    return "".join(f"{pad}{s}\n" if opens else f"{pad}{s}\n{pad}{fillers[i % len(fillers)]}\n"
                   for i, (pad, s, opens) in enumerate(_statements(text)))


def self_assignments(text: str) -> str:
    """After each statement, the name it binds (or the function's argument) bound to itself."""
    out, argument = [], "shards" if "shards" in text else "values"
    for pad, s, opens in _statements(text):
        out.append(f"{pad}{s}")
        name = re.match(r"([A-Za-z_]\w*)\s*\+?=", s)
        if not opens:
            out.append(f"{pad}{name.group(1) if name else argument} = {name.group(1) if name else argument}")
    return "\n".join(out) + "\n"


def if_true_wrappers(text: str) -> str:
    return "".join(f"{pad}{s}\n" if opens else f"{pad}if True:\n{pad}    {s}\n" for pad, s, opens in _statements(text))


def renamed(text: str) -> str:
    for old, new in RENAMES.items():
        text = re.sub(rf"\b{old}\b", new, text)
    return text


DRESSINGS = {"semicolon-pass": semicolon_pass, "semicolon-pass-renamed": lambda t: semicolon_pass(renamed(t)),
             "pass-lines": pass_lines, "pass-lines-renamed": lambda t: pass_lines(renamed(t)),
             "docstrings-and-ellipses": docstrings_and_ellipses, "self-assignments": self_assignments,
             "if-true-wrappers": if_true_wrappers}


def _code(student: str, text: str) -> similarity.Code:
    return similarity.Code(student, "local_mean_diagnosis", "local_mean_diagnosis.ipynb", text)


def _pairs(texts: dict[str, str], **options) -> dict[frozenset, similarity.Pair]:
    pairs = similarity.similar_pairs([_code(s, t) for s, t in texts.items()], [], **options)
    return {frozenset((p.first.student, p.second.student)): p for p in pairs}


@pytest.mark.parametrize("dressing", DRESSINGS)
@pytest.mark.parametrize("answer", ["fragment", "cell"])
def test_a_copy_dressed_in_statements_that_do_nothing_is_paired_with_its_original(dressing, answer):
    original = ORIGINAL if answer == "fragment" else HELPER
    dressed = DRESSINGS[dressing](original)
    compile(dressed if answer == "cell" else "def two_averages(shards):\n" + dressed, "dressed", "exec")  # valid
    texts = {"original": original, "copier": dressed} | {f"other-{i}": other for i, other in enumerate(OTHERS)}
    found = _pairs(texts)
    assert set(found) == {frozenset(("original", "copier"))}, dressing  # and no honest answer paired
    pair = found[frozenset(("original", "copier"))]
    assert min(pair.shares) >= similarity.THRESHOLD and not pair.identical
    copier = pair.marked[[pair.first.student, pair.second.student].index("copier")]
    shown = "".join(dressed[start:end] for start, end in copier)  # marked on what the copier wrote
    assert "float(" in shown and all(0 <= start < end <= len(dressed) for start, end in copier)


@pytest.mark.parametrize("dressing", [d for d in DRESSINGS if "renamed" not in d])
def test_the_normal_form_of_a_dressed_copy_is_the_originals(dressing):
    for original in (ORIGINAL, HELPER):
        assert normal_form(DRESSINGS[dressing](original)).text == normal_form(original).text


def test_the_normal_form_keeps_what_does_something():
    form = normal_form('if flag:\n    x = 1\nelse:\n    pass\nwhile False:\n    junk()\nfor i in r:\n    y = y\n'
                       'try:\n    go()\nexcept ValueError:\n    pass\nfinally:\n    ...\nwhile True:\n    break\n')
    assert form.text.splitlines() == ["if flag:", "x = 1", "for i in r:", "try:", "go()", "except ValueError:",
                                      "while True:", "break"]
    fragments = normal_form("        total = f(a)\n    return total\n\nanswer = 2\n    extra = g(b); pass\n"
                            "%timeit f(x)\n")  # fragments of several cells, at several depths; a magic line
    assert fragments.text.splitlines() == ["total = f(a)", "return total", "answer = 2", "extra = g(b)",
                                           "%timeit f(x)"]


def test_honest_different_answers_are_not_paired():
    texts = {"original": ORIGINAL, "helper": HELPER} | {f"other-{i}": other for i, other in enumerate(OTHERS)}
    assert _pairs(texts) == {}


def test_no_sample_learner_of_the_course_is_paired():
    """The demo learners' own code (samples/scenarios) shares nothing listed, with each other or with the corpus's
    learners (tests/corpus, who make the same few mistakes on the same solution and may be listed together)."""
    from grader.course.variants import build, parse
    from grader.layout import Course

    course = Course.default()
    for assignment in course.assignments():
        given, codes = similarity.given_code(course, assignment), []
        for group, folder in (("sample", ROOT / "samples" / "scenarios"), ("corpus", ROOT / "tests" / "corpus")):
            for path in sorted((folder / assignment).glob("*.py")):
                if "same-as" in path.read_text().split("\n", 1)[0]:
                    continue
                notebook = json.loads(build(course, assignment, parse(path)))
                codes.append(similarity.Code(f"{group}-{path.stem}", assignment, f"{assignment}.ipynb",
                                             similarity.own_code(notebook, given), similarity.answer_cells(notebook)))
        pairs = similarity.similar_pairs(codes, similarity.course_code(course, assignment))
        assert not [p for p in pairs if "sample-" in p.first.student + p.second.student], assignment


SHARES = '''
import json, sys
from grader.classroom import similarity
texts = json.loads(sys.stdin.read())
codes = [similarity.Code(s, "a", "a.ipynb", t) for s, t in texts.items()]
print(json.dumps(sorted([p.first.student, p.second.student, list(p.shares), p.marked]
                        for p in similarity.similar_pairs(codes, [], threshold=0.0))))
'''


def test_the_shares_are_the_same_whatever_the_hash_seed():
    texts = {"original": ORIGINAL, "edited": EDITED, "dressed": pass_lines(renamed(EDITED)), "other": OTHERS[0],
             "helper": HELPER, "helper-edited": HELPER.replace("    total = 0.0\n", "    total = 0.0 + 0.0\n")}
    seen = {}
    for seed in ("0", "1", "random"):
        run = subprocess.run([sys.executable, "-c", SHARES], input=json.dumps(texts), capture_output=True, text=True,
                             cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=120, check=True)
        seen[seed] = json.loads(run.stdout)
    assert seen["0"] == seen["1"] == seen["random"]
    shares = {(a, b): s for a, b, s, _ in seen["0"]}
    assert any(0 < min(s) < 1 for s in shares.values())  # partial copies: where winnowing's choices would show


def test_a_copy_is_paired_in_a_class_whose_code_is_uniform():
    """In a class where most lines are the same (the lesson's code, typed by everyone), the fingerprints rare enough
    to count are too few for an unchanged or renamed copy to pass the cheap first filter: the benchmark's class found
    6 of 10 planted copies. The same fingerprints are always a candidate pair."""
    calls = ["np.sum", "np.mean", "np.max", "np.min", "np.median", "np.std", "np.var", "np.ptp", "np.prod", "np.sort"]
    texts = {}
    for n in range(60):  # everyone types the lesson's lines; each adds three lines of their own
        own = [calls[(n + k) % 10] for k in range(3)] if n % 2 else [calls[(n * 3 + k) % 10] for k in range(3)]
        texts[f"learner-{n:02d}"] = ORIGINAL.replace("    return weighted, unweighted\n", "".join(
            f"    extra_{k} = {call}(every_value) * {n + k}\n" for k, call in enumerate(own))
            + "    return weighted, unweighted\n")
    texts["copier"] = texts["learner-07"]
    texts["renamer"] = renamed(texts["learner-11"])
    pairs = _pairs(texts)
    assert frozenset({"copier", "learner-07"}) in pairs and frozenset({"renamer", "learner-11"}) in pairs, list(pairs)
