"""References for collectives' test cells, computed by the grader in NumPy.

Gradients come from the analytic 2/N X^T (Xw - y), payloads from the ring
formulas; hidden inputs are rebuilt from the seeds the hidden tests use. The
timing test is judged on how the learner's timer measured a probe whose result
completes a known time after the call returns, never on speed.
"""
import numpy as np

from coursekit import data
from grader.judge import Evidence, Mismatch, Rubric

rubric = Rubric()

ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER = "stablehlo.all_reduce", "stablehlo.reduce_scatter", "stablehlo.all_gather"


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ np.asarray(w, dtype=np.float64) - y) / len(y)


def terms(x, y, w, devices):
    """Each device's term 2/N X_r^T (X_r w - y_r), rows split into equal consecutive blocks."""
    block = len(y) // devices
    x = x.astype(np.float64)
    return np.stack([
        2 * x[r * block:(r + 1) * block].T @ (x[r * block:(r + 1) * block] @ w - y[r * block:(r + 1) * block]) / len(y)
        for r in range(devices)
    ])


def portions_close(e: Evidence, key: str, expected, devices: int, *, rtol=1e-5, atol=1e-7):
    """Each of ``devices`` shards holds exactly its consecutive slice of ``expected``."""
    expected = np.asarray(expected, dtype=np.float64)
    e.close(key, expected, rtol=rtol, atol=atol, what=f"{key} (global value)")
    portion = len(expected) // devices
    e.shard_shapes(key, (portion,), devices=devices)
    starts = set()
    for shard in e.get(key).shards:
        try:
            start, stop = shard.index[0]
        except (TypeError, ValueError, IndexError):
            raise Mismatch(f"{key}: shard on device {shard.device} has no slice index") from None
        start = 0 if start is None else start
        stop = len(expected) if stop is None else stop
        e.require(stop - start == portion, f"{key}: device {shard.device} should hold {portion} consecutive values")
        e.require(np.allclose(shard.value.astype(np.float64), expected[start:stop], rtol=rtol, atol=atol),
                  f"{key}: the portion on device {shard.device} is not its slice of the reference")
        starts.add(start)
    e.require(len(starts) == devices, f"{key}: the devices should hold different portions")


@rubric.test("test-local-contribution")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    expected = terms(x, y, w, p)
    e.close("lesson.terms", expected, rtol=1e-5, atol=1e-7, what="the local contributions on the lesson data")
    hx, hy, hw = data.random_regression(seed=90301, rows=3 * p, cols=5)
    e.close("hidden.terms", terms(hx, hy, hw, p), rtol=1e-4, atol=1e-5,
            what="local_contribution on an unseen batch")


@rubric.test("test-all-reduce")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    e.array("lesson.all_reduce", shape=(8,), jax=True)
    e.close("lesson.all_reduce", gradient(x, y, w), rtol=1e-5, atol=1e-7, what="the all-reduced gradient")
    e.shard_shapes("lesson.all_reduce", (8,), devices=p)
    e.replicas_close("lesson.all_reduce", gradient(x, y, w), rtol=1e-5, atol=1e-7)
    hx, hy, hw = data.random_regression(seed=90302, rows=3 * p, cols=5)
    e.array("hidden.all_reduce", shape=(5,), jax=True)
    e.shard_shapes("hidden.all_reduce", (5,), devices=p)
    e.replicas_close("hidden.all_reduce", gradient(hx, hy, hw), rtol=1e-4, atol=1e-5)


@rubric.test("test-reduce-scatter")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    e.array("lesson.reduce_scatter", shape=(8,), jax=True)
    portions_close(e, "lesson.reduce_scatter", gradient(x, y, w), p)
    hx, hy, hw = data.random_regression(seed=90303, rows=2 * p, cols=2 * p)
    e.array("hidden.reduce_scatter", shape=(2 * p,), jax=True)
    portions_close(e, "hidden.reduce_scatter", gradient(hx, hy, hw), p, rtol=1e-4, atol=1e-5)


@rubric.test("test-all-gather")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    e.array("lesson.gathered", shape=(8,), jax=True)
    e.shard_shapes("lesson.gathered", (8,), devices=p)
    e.replicas_close("lesson.gathered", gradient(x, y, w), rtol=1e-5, atol=1e-7)
    _, vector, _ = data.random_regression(seed=90304, rows=3 * p, cols=2)
    e.array("hidden.gathered", shape=(3 * p,), jax=True)
    e.shard_shapes("hidden.gathered", (3 * p,), devices=p)
    e.replicas_close("hidden.gathered", vector, rtol=1e-6, atol=1e-7)


def _lowered(e: Evidence, prefix: str):
    expectations = {
        "all_gradient": (ALL_REDUCE, (REDUCE_SCATTER, ALL_GATHER)),
        "shard_gradient": (REDUCE_SCATTER, (ALL_REDUCE, ALL_GATHER)),
        "gather": (ALL_GATHER, (ALL_REDUCE, REDUCE_SCATTER)),
    }
    for name, (wanted, unwanted) in expectations.items():
        text = e.text(f"{prefix}{name}")
        e.require("stablehlo" in text and "func.func" in text, f"{prefix}{name}: this is not lowered StableHLO text")
        e.require(wanted in text, f"{prefix}{name}: the lowered program has no {wanted}")
        for other in unwanted:
            e.require(other not in text, f"{prefix}{name}: the lowered program also contains {other}")


@rubric.test("test-lowered")
def _(e: Evidence):
    _lowered(e, "lowered.")
    _lowered(e, "hidden.lowered.")


def _probe(e: Evidence, key: str, repeats: int, delay_us: float):
    log = e.text(f"{key}.log").split()
    e.require("call-with-wrong-arguments" not in log, "completed_samples should call fn with the arguments it was given")
    e.require(log[:2] == ["call", "ready"],
              "completed_samples should start with one warm-up call and wait for its result")
    e.require(log == ["call", "ready"] * (repeats + 1),
              f"with repeats={repeats}, expected one waited warm-up and {repeats} waited calls")
    samples = e.array(f"{key}.samples", shape=(repeats,))
    e.require(bool(np.all(samples >= 0.95 * delay_us)),
              "a sample ended before the result was ready (or is not in microseconds): "
              "stop the clock after block_until_ready()")


@rubric.test("test-timing")
def _(e: Evidence):
    e.equal("timing.sample_count", 7, what="the number of samples by default")
    _probe(e, "timing.probe", 7, 3000.0)
    _probe(e, "timing.short", 3, 1000.0)


def ring(size, ranks):
    scatter = (ranks - 1) / ranks * size
    return scatter, 2 * scatter


@rubric.test("test-payload")
def _(e: Evidence):
    e.close("payload.lesson", [24.0, 48.0], rtol=1e-9, atol=1e-9, what="the payload at G = 32 bytes, p = 4")
    cases = [(32, e.num_devices), (1000, 5), (4096, 2), (96, 3), (48, 16), (40, 1)]
    e.close("payload.hidden", [ring(size, ranks) for size, ranks in cases], rtol=1e-9, atol=1e-9,
            what="ring_payload at other sizes and rank counts")


@rubric.test("test-momentum")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    v = np.linspace(-0.02, 0.03, 8, dtype=np.float32).astype(np.float64)
    new_v = 0.9 * v + gradient(x, y, w)
    e.array("momentum.new_v", shape=(8,), jax=True)
    portions_close(e, "momentum.new_v", new_v, p)
    e.array("momentum.new_w", shape=(8,), jax=True)
    portions_close(e, "momentum.new_w", w - 0.1 * new_v, p)
    _, hw, _ = data.random_regression(seed=90306, rows=3 * p, cols=2)
    _, hv, _ = data.random_regression(seed=90307, rows=3 * p, cols=2)
    _, hg, _ = data.random_regression(seed=90308, rows=3 * p, cols=2)
    hidden_v = 0.8 * hv.astype(np.float64) + hg
    e.array("hidden.momentum.new_v", shape=(3 * p,), jax=True)
    portions_close(e, "hidden.momentum.new_v", hidden_v, p, rtol=1e-5, atol=1e-6)
    e.array("hidden.momentum.new_w", shape=(3 * p,), jax=True)
    portions_close(e, "hidden.momentum.new_w", hw - 0.05 * hidden_v, p, rtol=1e-5, atol=1e-6)


def _reversal(e: Evidence, prefix: str, x, y, w, rtol, atol):
    p = e.num_devices
    expected = gradient(x, y, w)
    for name in ("all_reduced", "gathered"):
        key = f"{prefix}{name}"
        e.array(key, shape=expected.shape, jax=True)
        e.shard_shapes(key, expected.shape, devices=p)
        e.replicas_close(key, expected, rtol=rtol, atol=atol)
    label_only = gradient(x, y[::-1], w)
    e.close(f"{prefix}label_only", label_only, rtol=rtol, atol=atol, what="the label-only reversal gradient")
    e.require(np.max(np.abs(label_only - expected)) > 0.01, "instructor error: reversal data too symmetric")


@rubric.test("test-make-it-yours")
def _(e: Evidence):
    x, y, w = data.collectives_batch()
    _reversal(e, "yours.", x, y, w + np.float32(0.17), 1e-5, 1e-6)
    hx, hy, hw = data.random_regression(seed=90309, rows=16, cols=8)
    _reversal(e, "hidden.yours.", hx, hy, hw, 1e-4, 1e-5)


def budget(size, rank_counts):
    return [[p, ring(size, p)[1], 2 * ring(size, p)[0], size / p] for p in rank_counts]


@rubric.test("test-budget")
def _(e: Evidence):
    e.close("budget.lesson", budget(2**20, [2, 4, 8]), rtol=1e-9, atol=1e-6, what="the 1 MiB transfer budget")
    e.close("budget.hidden", budget(960, [3, 5, 16, e.num_devices]), rtol=1e-9, atol=1e-6,
            what="transfer_budget at another size and rank counts")


@rubric.test("test-quiz")
def _(e: Evidence):
    e.equal("quiz.answer", 2, what="the multiple-choice answer")
