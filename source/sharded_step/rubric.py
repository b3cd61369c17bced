"""References for sharded_step's test cells, computed by the grader in NumPy.

Hidden inputs are rebuilt from the same seeds the hidden tests use; the
expected values come from the analytic gradient 2/N X^T (Xw - y), never from
JAX.
"""
import numpy as np

from coursekit import data
from grader.judge import Evidence, Rubric

rubric = Rubric()


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ w - y) / len(y)


def loss(x, y, w):
    return float(np.mean((x.astype(np.float64) @ w - y) ** 2))


def lesson():
    x, y = data.lesson_batch()
    return x, y, np.zeros(2)


@rubric.test("test-loss-and-gradient")
def _(e: Evidence):
    x, y, w = lesson()
    e.close("lesson.loss", 4.875, rtol=1e-6, what="the initial loss")
    e.close("lesson.loss", loss(x, y, w), rtol=1e-6, what="the initial loss")
    e.array("lesson.gradient", shape=(2,), jax=True)
    e.close("lesson.gradient", [-5.25, -0.75], what="the lesson's gradient")
    hx, hy, hw = data.random_regression(seed=90201, rows=4 * e.num_devices, cols=3)
    e.close("hidden.loss", loss(hx, hy, hw), rtol=1e-5, what="the loss on an unseen batch")
    e.array("hidden.gradient", shape=(3,), jax=True)
    e.close("hidden.gradient", gradient(hx, hy, hw), rtol=1e-4, atol=1e-5, what="the gradient on an unseen batch")


@rubric.test("test-update")
def _(e: Evidence):
    e.close("lesson.new_w", [0.525, 0.075], what="the weights after one step")
    hx, hy, hw = data.random_regression(seed=90202, rows=2 * e.num_devices, cols=2)
    e.array("hidden.new_w", shape=(2,), jax=True)
    e.close("hidden.new_w", hw - 0.37 * gradient(hx, hy, hw), rtol=1e-4, atol=1e-5,
            what="the update at another learning rate")


@rubric.test("test-placement")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = lesson()
    e.shard_shapes("lesson.new_w.shards", (2,), devices=p)
    e.replicas_close("lesson.new_w.shards", w - 0.1 * gradient(x, y, w))
    e.replicas_close("lesson.gradient.shards", gradient(x, y, w))
    hx, hy, hw = data.random_regression(seed=90203, rows=p, cols=5)
    g = gradient(hx, hy, hw)
    e.shard_shapes("hidden.placed.new_w", (5,), devices=p)
    e.replicas_close("hidden.placed.new_w", hw - 0.2 * g, rtol=1e-4, atol=1e-5)
    e.replicas_close("hidden.placed.gradient", g, rtol=1e-4, atol=1e-5)
    e.require(e.number("hidden.device_count") == p, f"the notebook should use all {p} devices")


@rubric.test("test-ten-steps")
def _(e: Evidence):
    x, y, w = lesson()
    for _ in range(10):
        w = w - 0.1 * gradient(x, y, w)
    e.close("lesson.ten_steps", w, rtol=1e-5, atol=1e-6, what="the weights after ten steps")
    hx, hy, hw = data.random_regression(seed=90204, rows=2 * e.num_devices, cols=2)
    expected = []
    for _ in range(10):
        hw = hw - 0.05 * gradient(hx, hy, hw)
        expected.append(hw)
    e.close("hidden.trajectory", np.stack(expected), rtol=1e-4, atol=1e-5,
            what="ten steps on an unseen batch")


def _transfer(true_weights, start, rate):
    x, _ = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights)
    start = np.asarray(start, dtype=np.float64)
    return start - rate * gradient(x, y, start)


@rubric.test("test-transfer")
def _(e: Evidence):
    expected = _transfer([-1.0, 3.0], [0.2, -0.1], 0.05)
    e.array("transfer.sharded", shape=(2,), jax=True)
    e.close("transfer.sharded", expected, what="the sharded transfer step")
    e.close("transfer.host", expected, what="your host derivation of the transfer step")
    other = _transfer([0.5, -2.0], [1.0, 1.0], 0.02)
    e.array("transfer.other.sharded", shape=(2,), jax=True)
    e.close("transfer.other.sharded", other, rtol=1e-5, what="transfer_step with other targets")
    e.close("transfer.other.host", other, rtol=1e-5, what="your host derivation with other targets")


@rubric.test("test-quiz")
def _(e: Evidence):
    e.equal("quiz.answer", 2, what="the multiple-choice answer")
