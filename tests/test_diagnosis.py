"""Feedback that names the mistake, other mesh sizes, and the corpus that proves both (fast: nothing is graded).

The corpus itself is graded in ``test_scenarios`` (each wrong answer loses
exactly its ``expect-fail`` tests and a failed test's message contains each
``expect-message``); here: its size, that every wrong answer states the message
it must get, and the pieces the rubrics build those messages from.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from coursekit.meshes import rebound, sub_mesh_sizes
from coursekit.record import encode
from grader.submission.judge import Evidence, Mismatch, denominator_mistakes
from grader.submission.rubric_loading import load_rubric
from grader.visible_checks import visible_check
from grader.layout import ASSIGNMENTS
from grader.submission.records import decode
from grader.course.variants import parse

CORPUS = Path(__file__).parent / "corpus"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_corpus_has_14_wrong_and_5_correct_answers_and_each_wrong_one_names_its_mistake(assignment):
    scenarios = [parse(path) for path in sorted((CORPUS / assignment).glob("*.py"))]
    wrong = [s for s in scenarios if s.expect_fail and s.base == "solution"]
    correct = [s for s in scenarios if not s.expect_fail]
    assert len(wrong) >= 14 and len(correct) >= 5, (assignment, len(wrong), len(correct))
    assert [s.name for s in scenarios if s.expect_fail and not s.expect_message] == []
    fours = [s for s in wrong if "four devices" in s.description]
    assert len(fours) >= 2, f"{assignment}: answers that hard-code four devices"


def test_sub_mesh_sizes_are_other_sizes_including_one_that_is_not_a_power_of_two():
    assert sub_mesh_sizes(1) == [] and sub_mesh_sizes(2) == [1]
    assert sub_mesh_sizes(4) == [1, 2, 3] and sub_mesh_sizes(8) == [1, 4, 7]
    for p in (4, 8):
        assert any(k & (k - 1) for k in sub_mesh_sizes(p)) and p not in sub_mesh_sizes(p)


def test_rebound_restores_every_name_even_after_an_error():
    names = {"rows": "mesh of 4"}
    with pytest.raises(RuntimeError), rebound(names, rows="mesh of 3", devices=[0, 1, 2]):
        assert names == {"rows": "mesh of 3", "devices": [0, 1, 2]}
        raise RuntimeError("the learner's step failed on the smaller mesh")
    assert names == {"rows": "mesh of 4"}


def _evidence(**values) -> Evidence:
    return Evidence({key: decode(encode(np.asarray(value))) for key, value in values.items()}, num_devices=4)


def test_a_value_off_by_a_known_factor_is_named_and_the_reference_is_not_shown():
    reference = np.array([-5.25, -0.75])
    mistakes = denominator_mistakes(reference, devices=4, count=8)
    for factor, says in [(4, "per-device means were summed"), (0.25, "divided by the number of devices"),
                         (8, "a sum over the examples"), (0.5, "factor 2")]:
        with pytest.raises(Mismatch) as failure:
            _evidence(g=factor * reference).close("g", reference, what="the gradient", mistakes=mistakes)
        assert says in str(failure.value) and "5.25" not in str(failure.value)
    with pytest.raises(Mismatch) as failure:  # not a recognizable pattern: no guess
        _evidence(g=[1.0, 2.0]).close("g", reference, what="the gradient", mistakes=mistakes)
    assert str(failure.value) == ("the gradient: differs from the host NumPy reference; it is off by 130% (the norm "
                                  "of the difference, relative to the reference's)")  # what differs, by how much
    on_three = denominator_mistakes(reference, devices=4, mesh=3)
    with pytest.raises(Mismatch, match="assumes four devices"):
        _evidence(g=0.75 * reference).close("g", reference, mistakes=on_three)


SOURCE = textwrap.dedent('''\
    record("lesson.loss", before)
    np.testing.assert_allclose(float(before), 4.875, rtol=1e-6, err_msg="the initial loss should be 4.875")
    for name in ["w"]:
        assert ok(name), f"{name} should be replicated"
    assert_allclose(x, 1)
    np.testing.assert_allclose(g, [1, 2])
    ### BEGIN HIDDEN TESTS
    assert hidden_value == 90201, "hidden message"
    ### END HIDDEN TESTS
    ''')


def _error(line: int, ename: str = "AssertionError", evalue: str = "ACTUAL: 3.0 DESIRED: 90201") -> dict:
    frame = f"\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[7]\x1b[39m\x1b[32m, line {line}\x1b[39m\n----> {line} ..."
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": ["\x1b[31m----\x1b[39m", f"\x1b[31m{ename}\x1b[39m   Traceback (most recent call last)", frame,
                          "File numpy/testing/_private/utils.py, line 1592, in assert_allclose"]}


def test_visible_check_quotes_the_instructors_assertion_never_the_kernels_text():
    assert visible_check(SOURCE, _error(2)) == "the visible check failed: the initial loss should be 4.875"
    assert visible_check(SOURCE, _error(4)) == "the visible check failed: <name> should be replicated"
    assert visible_check(SOURCE, _error(6)) == "the visible check of g failed"  # no message: never its code
    assert visible_check(SOURCE, _error(1)) is None  # not an assertion
    assert visible_check(SOURCE, _error(5)) is None  # a bare function call is not np.testing
    assert visible_check(SOURCE, _error(8)) is None  # a hidden line is never quoted
    assert visible_check(SOURCE, _error(2, ename="NameError")) is None
    assert visible_check(SOURCE, {"ename": "AssertionError", "traceback": ["no frame"]}) is None
    assert visible_check(SOURCE, {"ename": "AssertionError", "traceback": "not a list"}) is None
    for line in range(1, 12):
        assert "90201" not in str(visible_check(SOURCE, _error(line)))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_visible_check_of_the_course_says_what_it_checks(course, assignment):
    """Each assertion before a test cell's hidden block carries a message in the lesson's words, which is what a
    learner reads when it fails (the check's code is never shown)."""
    import ast

    import nbformat

    from grader import cells
    from grader.visible_checks import _HIDDEN_BEGIN, _is_testing_assert

    silent = []
    for cell in nbformat.read(course.source_notebook(assignment), as_version=4).cells:
        if not cells.is_autograded_test(cell):
            continue
        hidden = _HIDDEN_BEGIN.search(cell.source)
        visible = cell.source[:hidden.start()] if hidden else cell.source
        for node in ast.walk(ast.parse(visible)):
            if isinstance(node, ast.Assert) and node.msg is None or (
                    isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                    and _is_testing_assert(node.value.func) and not any(k.arg == "err_msg" for k in node.value.keywords)):
                silent.append(f"{cells.grade_id(cell)}: {ast.get_source_segment(visible, node)[:80]}")
    assert not silent, silent


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_names_its_values_in_learner_words(course, assignment):
    """A judge given no records fails with a message that names no record key."""
    rubric = load_rubric(course.rubric(assignment))
    for grade_id in rubric.judges:
        passed, message = rubric.judge(grade_id, Evidence({}, num_devices=4))
        assert not passed
        assert not any(part in message for part in ("lesson.", "hidden.", "device.", "example.", "transfer.",
                                                    "timing.", "payload.", "budget.", "momentum.", "yours.")), message


def _timing_rubric(course):
    import importlib

    load_rubric(course.rubric("collectives"))
    return importlib.import_module("_course_rubric_collectives.rubric_measurements")


def test_timer_mistakes_are_told_apart(course):
    rubric = _timing_rubric(course)
    rng = np.random.default_rng(0)

    def probes(scale=1.0, cumulative=False, dispatch=False, late=(50, 600)):
        found = {}
        for delay, repeats in [(8000.0, 7), (2000.0, 3)]:
            samples = delay + rng.uniform(*late, size=repeats)  # a loaded machine oversleeps a little
            if cumulative:
                samples = np.cumsum(samples)
            if dispatch:
                samples = rng.uniform(3, 15, size=repeats)
            found[delay] = samples * scale
        return found

    assert rubric._timer_mistake(probes()) is None
    assert "cumulative" in rubric._timer_mistake(probes(cumulative=True))
    assert "nanoseconds" in rubric._timer_mistake(probes(scale=1000))
    assert "in seconds" in rubric._timer_mistake(probes(scale=1e-6))
    assert "milliseconds" in rubric._timer_mistake(probes(scale=1e-3))
    assert rubric._timer_mistake(probes(dispatch=True)) is None  # left to "ended before the result was ready"
    for constant in (20.0, 100.0, 1000.0):  # the same short time for every delay is never taken for a unit
        same = {delay: np.full(n, constant) + rng.uniform(0, 1, size=n) for delay, n in [(8000.0, 7), (2000.0, 3)]}
        assert "not microseconds" not in (rubric._timer_mistake(same) or "")
    assert "in seconds" in rubric._timer_mistake(probes(scale=1e-6, late=(1000, 3000)))  # a machine under load
    averaged = {delay: np.full_like(s, s.mean()) for delay, s in probes().items()}  # one loop average, repeated
    assert "all the same" in rubric._timer_mistake(averaged)


def _timing_evidence(samples_of, oversleep_us: float) -> Evidence:
    """test-timing's records for a machine where every sleep wakes up to ``oversleep_us`` late (a throttled cgroup;
    a probe call sleeps twice): each probe call's own duration by the probe's clock (``took``, the warm-up first)
    and the learner's samples, ``samples_of(took)``."""
    records, rng = {"timing.sample_count": 7}, np.random.default_rng(1)
    for key, repeats, delay in [("timing.probe", 7, 8000.0), ("timing.short", 3, 2000.0)]:
        took = np.array([21.0 * delay] + [delay] * repeats) + rng.uniform(20, 300, repeats + 1) \
            + 2 * oversleep_us * rng.uniform(0.5, 1, repeats + 1)
        records[f"{key}.log"] = " ".join(["call", "ready"] * (repeats + 1))
        records[f"{key}.took"] = took
        records[f"{key}.samples"] = samples_of(took)
    return Evidence({k: decode(encode(v if isinstance(v, (int, str)) else np.asarray(v))) for k, v in records.items()},
                    num_devices=4)


def test_a_correct_timer_passes_on_a_machine_whose_sleeps_wake_late(course):
    """The probe sleeps; on a busy grader (CI, a class at once) every sleep may wake milliseconds late, in the call
    and in the learner's sample alike. Judged against each call's own duration, a correct timer passes however late
    the machine wakes and each wrong one is still named; judged against the nominal durations a correct timer
    failed ("far longer than one call") on CI."""
    rubric = load_rubric(course.rubric("collectives"))
    wrong = {"the samples add up": lambda took: np.cumsum(took[1:]) + 4.0,
             "includes the warm-up call": lambda took: took[:-1] + 4.0,  # repeats + 1 timed, the first kept
             "in seconds": lambda took: (took[1:] + 4.0) * 1e-6,
             "leaves out the call itself": lambda took: 0.7 * took[1:]}
    def stalled(took):  # one later sample of each probe waited 90 ms in the scheduler, outside the probe's clock
        samples = took[1:] + 4.0
        samples[2] += 90_000.0
        return samples

    def first_stalled(took):  # the first timed call of each probe waited in the scheduler over half the warm-up's
        samples = took[1:] + 4.0  # length (a CI run at a load of 8 on 2 cores): still not the warm-up itself
        samples[0] += 0.6 * (took[0] - took[1])
        return samples

    for late in (0.0, 3000.0, 10000.0, 40000.0):
        passed, message = rubric.judge("test-timing", _timing_evidence(lambda took: took[1:] + 4.0, late))
        assert passed, (late, message)
        passed, message = rubric.judge("test-timing", _timing_evidence(first_stalled, late))
        assert passed, (late, message)
        passed, message = rubric.judge("test-timing", _timing_evidence(stalled, late))  # as long as the warm-up:
        assert passed, (late, message)  # not the warm-up, which is always the first call
        for mistake, samples_of in wrong.items():
            passed, message = rubric.judge("test-timing", _timing_evidence(samples_of, late))
            assert not passed and mistake in message, (late, mistake, message)


def test_lowered_text_lowers_the_function_itself_not_a_stand_ins_text():
    code = textwrap.dedent('''\
        from coursekit.runtime import start_jax
        devices = start_jax(2, "cpu")
        import jax, numpy as np
        from jax.sharding import Mesh, PartitionSpec as P
        from coursekit.record import lowered_text

        class Text:
            def compiler_ir(self, dialect=None):
                return "func.func stablehlo.all_reduce"
            as_text = compiler_ir

        class StandIn:  # right values, no collective, and a lower() that claims one
            def __call__(self, v):
                return v * 2
            def lower(self, *args):
                return Text()

        class NotCallable:
            def lower(self, *args):
                return Text()

        mesh = Mesh(np.array(devices), ("data",))
        real = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "data"), mesh=mesh, in_specs=P("data"), out_specs=P()))
        print("real", "stablehlo.all_reduce" in lowered_text(real, np.ones(4, np.float32)))
        print("stand-in", "stablehlo.all_reduce" in lowered_text(StandIn(), np.ones(4, np.float32)))
        try:
            lowered_text(NotCallable(), np.ones(4, np.float32))
        except TypeError:
            print("not callable: TypeError")
        ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-3:] == ["real True", "stand-in False", "not callable: TypeError"], done.stdout


def test_a_step_without_jax_jit_is_told_from_every_way_of_jitting_one():
    """coursekit.checks.one_program: a plain Python step gives the lesson's values and placements, so only its trace
    shows that nothing was jitted; the Python around a jitted step (a closure, a global, a partial, a jit made in the
    call) is one program too."""
    code = textwrap.dedent('''
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        import functools
        import jax, jax.numpy as jnp, numpy as np
        from coursekit.checks import Dispatch, one_program

        def loss(w, x, y):
            return jnp.mean((x @ w - y) ** 2)

        def step(w, x, y):
            value, gradient = jax.value_and_grad(loss)(w, x, y)
            return w - 0.1 * gradient, value, gradient

        GLOBAL_STEP = jax.jit(step)

        def calls_a_global(w, x, y):
            return GLOBAL_STEP(w, x, y)

        def closure():
            compiled = jax.jit(step)
            return lambda *a: tuple(compiled(*a))

        def jit_in_the_call(w, x, y):
            return jax.jit(step)(w, x, y)

        def numpy_inside(w, x, y):
            return np.asarray(w)

        args = (jnp.zeros(3), jnp.ones((4, 3)), jnp.ones(4))
        for name, fn in [("plain", step), ("jitted", jax.jit(step)), ("global", calls_a_global), ("closure", closure()),
                         ("in the call", jit_in_the_call),
                         ("partial", functools.partial(jax.jit(lambda w, x, y, rate: step(w, x, y)), rate=0.1)),
                         ("numpy", numpy_inside)]:
            print(name, {Dispatch.ONE_PROGRAM: "one program", Dispatch.OP_BY_OP: "op by op",
                         Dispatch.NOT_TRACED: "not traced"}[one_program(fn, *args)])
        ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["plain op by op", "jitted one program", "global one program",
                                        "closure one program", "in the call one program", "partial one program",
                                        "numpy not traced"], done.stdout


def test_a_raised_cell_is_said_in_the_lessons_terms_and_the_kernels_text_never_shown():
    """``grader.raised``: the kernel's error only selects the course's sentence; a learner's own exception class is
    never named; a value never recorded because a cell raised is counted with the unreached ones (NOT_CHECKED)."""
    from grader import raised
    from grader.submission.judge import NOT_CHECKED

    untiled = {"ename": "ValueError", "evalue": "reduce_scatter operand scatter dimension size 8 must match shard "
               "count 4", "traceback": []}
    assert raised.raised(untiled).startswith("raised ValueError (psum_scatter over `data` needs `tiled=True` here")
    forged = {"ename": "SeedNinety0204", "evalue": "<script>hidden 90204", "traceback": ["<b>90204</b>"]}
    assert raised.raised(forged) == "raised an exception"
    assert raised.raised({"ename": "NameError", "evalue": "unbound axis name: batch"}).startswith(
        "raised NameError (a collective")
    carry = {"ename": "TypeError", "evalue": "scan body function carry input and carry output must have equal types, "
             "but they differ:\n\nThe input carry component carry[1] has type int32[] but the corresponding output "
             "carry component has type int32[]{V:data}, so the manual axis types do not match."}
    assert raised.raised(carry).startswith("raised TypeError (a `lax.scan` inside `jax.shard_map` must return its carry")
    cells = [{"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "collectives", "solution": True}},
              "outputs": [{"output_type": "error", **untiled}]},
             {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "test-x", "grade": True, "points": 1}},
              "outputs": []}]
    before = raised.first_raised_before(cells, "test-x")
    assert before == ("`collectives`", cells[0]["outputs"][0])
    said = raised.not_recorded(forged, before)
    assert said.startswith(NOT_CHECKED) and "the cell `collectives` above raised ValueError" in said
    assert raised.not_recorded(untiled, None).startswith(NOT_CHECKED + "this test's cell raised ValueError")
    assert raised.not_recorded(None, None) is None
