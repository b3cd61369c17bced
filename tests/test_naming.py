"""A name only when it is the cause: the loss-and-gradient test's named mistakes fire for their own mistake, and a
correct answer mutated in any other way (Hypothesis) gets no name, only what differs.

The test cell's records and the step program's run on the grader's batch are built here in NumPy, as a learner's
step of each kind would produce them (the lesson batch at w = 0, two features; the grader's batch of four rows per
device, three features, weights it drew), and judged by sharded_step's own rubric.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from coursekit import data
from coursekit.meshes import sub_mesh_sizes
from coursekit.record import encode
from grader.layout import Course
from grader.programs import Output, ProgramRun
from grader.submission.judge import Evidence, load_rubric
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
