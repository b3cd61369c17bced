"""A name only when it is the cause: the loss-and-gradient test's named mistakes fire for their own mistake, and a
correct answer mutated in any other way (Hypothesis) gets no name, only what differs.

The test cell's records and the step program's run on the grader's batch are built here in NumPy, as a learner's
step of each kind would produce them (the lesson batch at w = 0, two features; the grader's batch of four rows per
device, three features, weights it drew), and judged by sharded_step's own rubric.
"""
from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings, strategies as st

from coursekit import data
from coursekit.meshes import sub_mesh_sizes
from coursekit.record import encode
from grader.layout import Course
from grader.programs import Output, ProgramRun
from grader.submission.judge import Evidence
from grader.submission.rubric_loading import load_rubric
from grader.submission.records import decode

P = 4
RUBRIC = load_rubric(Course.default().rubric("sharded_step"))
NAMED = ["per-device means were summed", "divided by the number of devices", "a sum over the examples",
         "the sign is flipped", "the factor 2 of the derivative of a square is missing", "the factor 2 is applied twice",
         "multiplied elementwise", "assumes four devices"]


def _loss_gradient(kind: str, amount: float, x, y, w) -> tuple[float, np.ndarray]:
    """The loss and gradient a step of this kind returns on one batch."""
    x, y = x.astype(np.float64), np.asarray(y, dtype=np.float64)
    residual = x @ w - y
    loss, gradient = float(np.mean(residual**2)), 2 * x.T @ residual / len(y)
    if kind == "scaled":  # a constant factor no lesson mistake has
        return loss, amount * gradient
    if kind == "missing-factor-2":
        return loss, gradient / 2
    if kind == "summed-local-means":
        return loss, P * gradient
    if kind == "elementwise":
        wrong = x * w - y[:, None]
        return float(np.mean(wrong**2)), 2 * np.sum(x * wrong, axis=0) / wrong.size
    if kind == "weight-decay":
        return loss + amount * float(w @ w), gradient + 2 * amount * w
    if kind == "shifted-labels":
        shifted = x @ w - (y + amount)
        return float(np.mean(shifted**2)), 2 * x.T @ shifted / len(y)
    raise ValueError(kind)


def _verdict(kind: str, amount: float = 0.0) -> tuple[float, str]:
    x, y = data.lesson_batch()
    w = np.zeros(2)
    loss, gradient = _loss_gradient(kind, amount, x, y, w)
    rng = np.random.default_rng(7)
    output = lambda value: Output(np.asarray(value, dtype=np.float32), "P()", True, [], True)  # noqa: E731
    programs = {}
    for key, rows in [("program.step", 4 * P)] + [(f"program.mesh{size}.step", 3 * size) for size in sub_mesh_sizes(P)]:
        gx, gy, gw = rng.normal(size=(rows, 3)), rng.normal(size=rows), rng.normal(size=3)
        g_loss, g_gradient = _loss_gradient(kind, amount, gx, gy, gw)
        programs[key] = ProgramRun(key, inputs=[a.astype(np.float32) for a in (gw, gx, gy)],
                                   outputs=[output(gw - 0.1 * g_gradient), output(g_loss), output(g_gradient)])
    records = {"lesson.loss": decode(encode(np.float32(loss))), "lesson.gradient": decode(encode(
        gradient.astype(np.float32)))}
    evidence = Evidence(records, num_devices=P, names=RUBRIC.names, programs=programs)
    verdict = RUBRIC.verdict("test-loss-and-gradient", evidence, 3.0)
    return verdict.points, verdict.message


def test_each_named_mistake_is_named_for_its_own_cause():
    points, message = _verdict("missing-factor-2")
    assert "the factor 2 of the derivative of a square is missing" in message and points == 1, message
    points, message = _verdict("summed-local-means")
    assert "per-device means were summed" in message, message
    points, message = _verdict("elementwise")
    assert "multiplied elementwise" in message and "factor 2" not in message, message


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["scaled", "weight-decay", "shifted-labels"]),
       amount=st.floats(-6.0, 6.0, allow_nan=False).filter(lambda a: abs(a) > 0.05 and all(
           abs(a - f) > 0.05 for f in (1.0, -1.0, 0.5, 2.0, 4.0, 0.25, 8.0, 16.0, 0.75, 1.5, 1 / 3, 3.0))))
def test_an_answer_wrong_in_another_way_gets_no_lesson_mistakes_name(kind, amount):
    points, message = _verdict(kind, amount)
    assert points < 3.0, (kind, amount, message)  # wrong, and found (weight decay at w = 0 by the grader's batch)
    assert not any(name in message for name in NAMED), (kind, amount, message)
    # ... but what differs, on which case, by how much: a simple ratio to the reference, or how far off it is
    assert "on a batch the grader drew" in message or "unseen" in message or "initial" in message \
        or "at w = 0" in message, (kind, amount, message)
    assert re.search(r"it is off by [0-9.]+% \(the norm of the difference|it is (-?[0-9/]+ (times|of)|twice) the "
                     r"reference", message), (kind, amount, message)


# -- a cause named only where it holds: n_local x p, at 2 devices ------------------------------------------------------
COLLECTIVES = load_rubric(Course.default().rubric("collectives"))


def _contribution(features, labels, weights, global_count, *, devices: int, divide: str):
    """local_contribution as a learner of each kind writes it, in NumPy: "right" divides by global_count;
    "n_local x p" by its own row count times the notebook's device count (``devices``: len(jax.devices()))."""
    features, labels = features.astype(np.float64), np.asarray(labels, dtype=np.float64)
    residual = features @ np.asarray(weights, dtype=np.float64) - labels
    denominator = {"right": global_count, "n_local x p": len(labels) * devices,
                   "n_local x 3": len(labels) * 3}[divide]
    return 2 * features.T @ residual / denominator


def _local_contribution_verdict(divide: str, p: int):
    """test-local-contribution at ``p`` devices, the cell's records made by ``_contribution`` of that kind."""
    cases = _collectives_cases()

    def terms(x, y, w, blocks):
        rows = len(y) // blocks
        return np.stack([_contribution(x[r * rows:(r + 1) * rows], y[r * rows:(r + 1) * rows], w, len(y),
                                       devices=p, divide=divide) for r in range(blocks)])

    records = {"lesson.terms": terms(*data.collectives_batch(), p)}
    for count in cases.local_counts(p):
        records[f"hidden.{count}.terms"] = terms(*cases.local_batch(count), count)
    for key, batch, count in cases.summed_batches(p):
        records[key] = terms(*batch, count).sum(axis=0)
    recorded = {k: decode(encode(v.astype(np.float32))) for k, v in records.items()}
    recorded["inputs.local_contribution"] = decode(encode(np.ones(4, dtype=np.int64)))  # arguments left as they were
    evidence = Evidence(recorded, num_devices=p, names=COLLECTIVES.names)
    return COLLECTIVES.verdict("test-local-contribution", evidence, 2.0), records, cases


def _collectives_cases():
    import importlib.util
    import sys

    path = Course.default().source / "collectives" / "rubric_cases.py"
    spec = importlib.util.spec_from_file_location("collectives_rubric_cases_naming", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_n_local_times_p_is_named_at_two_devices_only_where_it_is_the_cause():
    """At 2 devices the lesson's blocks are the devices, so n_local x 2 = N there and the visible check passes; on
    one block of an unseen batch n_local x 2 = 2N: exactly half. The message names n_local x 2 (not the factor 2,
    which the lesson's case rules out), and that cause holds: the value is the one a local_contribution dividing by
    n_local x 2 returns. Dividing by n_local x 3 is another mistake: it gets no n_local x 2 name, only what differs."""
    verdict, records, cases = _local_contribution_verdict("n_local x p", 2)
    assert not verdict.passed and "divided by n_local x 2" in verdict.message, verdict.message
    assert "factor 2" not in verdict.message, verdict.message
    right, _, _ = _local_contribution_verdict("right", 2)
    assert right.passed, right.message
    # the cause holds: on one block the learner's value is k/p = 1/2 of the reference, which the message says
    x, y, w = cases.local_batch(1)
    reference = 2 * x.astype(np.float64).T @ (x.astype(np.float64) @ w - y) / len(y)
    assert np.allclose(records["hidden.1.terms"][0], reference / 2)
    x, y, w = cases.local_batch(2)  # the notebook's own 2 blocks: right there, as in the lesson's case
    assert np.allclose(records["hidden.2.terms"].sum(axis=0),
                       2 * x.astype(np.float64).T @ (x.astype(np.float64) @ w - y) / len(y))
    other, _, _ = _local_contribution_verdict("n_local x 3", 2)
    assert not other.passed and "n_local x" not in other.message, other.message
    assert re.search(r"off by [0-9.]+%|the reference", other.message), other.message
