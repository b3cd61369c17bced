"""References for local_mean_diagnosis's test cells, computed by the grader in NumPy.

Hidden inputs are rebuilt from the same seeds and helpers the hidden tests use.
Every reference is plain float64 NumPy arithmetic: global sums divided by
global counts, never JAX.
"""
import numpy as np

from coursekit import data
from grader.judge import Evidence, Rubric

rubric = Rubric()

LESSON_LOCALS_2222 = [[-2.0, 1.0], [-9.0, -1.0], [-6.0, 1.0], [-4.0, -4.0]]
LESSON_LOCALS_35 = [[-2.0, 0.0], [-7.2, -1.2]]
LESSON_GRADIENT = [-5.25, -0.75]


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ np.asarray(w, dtype=np.float64) - y) / len(y)


def block_gradients(x, y, w, sizes):
    bounds = np.cumsum(sizes)[:-1]
    return np.stack([gradient(xb, yb, w) for xb, yb in zip(np.split(x, bounds), np.split(y, bounds))])


def masked_mean(losses, mask):
    return float(np.where(mask, losses.astype(np.float64), 0.0).sum() / mask.sum())


def block_partials(losses, mask, num_shards):
    sums = np.where(mask, losses.astype(np.float64), 0.0).reshape(num_shards, -1).sum(axis=1)
    counts = mask.reshape(num_shards, -1).sum(axis=1)
    return sums, counts


def counts_equal(e: Evidence, key: str, expected, what: str) -> None:
    """Counts may be recorded as integers or floats; they must be the exact counts."""
    expected = np.asarray(expected)
    actual = e.array(key, shape=expected.shape, float_dtype=False)
    e.require(actual.dtype.kind in "iuf", f"{key}: expected numbers, got dtype {actual.dtype}")
    e.require(np.array_equal(actual.astype(np.float64), expected.astype(np.float64)),
              f"{what} does not match the host NumPy reference")


def local_means_close(e: Evidence, key: str, sums, counts, what: str) -> None:
    """Local means of non-empty shards match; an empty shard's mean only has to be finite."""
    actual = e.array(key, shape=np.shape(sums))  # rejects NaN and infinity
    nonempty = np.asarray(counts) > 0
    expected = np.asarray(sums)[nonempty] / np.asarray(counts)[nonempty]
    e.require(np.allclose(actual[nonempty].astype(np.float64), expected, rtol=1e-5, atol=1e-6),
              f"{what} does not match the host NumPy reference")


@rubric.test("test-two-averages")
def _(e: Evidence):
    e.close("example.global_mean", 2.0, what="the global mean of the two-shard example")
    e.close("example.mean_of_local_means", 2.5, what="the mean of local means of the two-shard example")
    shards = data.ragged_shards(seed=90221, num_shards=e.num_devices)
    e.close("hidden.global_mean", np.concatenate(shards).mean(), what="the global mean on unseen shards")
    e.close("hidden.mean_of_local_means", np.mean([s.mean() for s in shards]),
            what="the mean of local means on unseen shards")


@rubric.test("test-local-gradients")
def _(e: Evidence):
    x, y = data.lesson_batch()
    w = np.zeros(2)
    e.close("lesson.local_gradients", block_gradients(x, y, w, [2, 2, 2, 2]),
            what="the four local mean gradients of the lesson batch")
    e.close("lesson.local_gradients", LESSON_LOCALS_2222, what="the four local mean gradients of the lesson batch")
    e.close("lesson.local_gradients_3_5", block_gradients(x, y, w, [3, 5]),
            what="the local mean gradients of the 3 + 5 split")
    sizes = list(range(1, e.num_devices + 1))
    hx, hy, hw = data.random_regression(seed=90222, rows=sum(sizes), cols=3)
    e.close("hidden.local_gradients", block_gradients(hx, hy, hw, sizes), rtol=1e-5, atol=1e-6,
            what="local mean gradients of unequal blocks of an unseen batch")


@rubric.test("test-equal-shards")
def _(e: Evidence):
    e.close("lesson.equal", LESSON_GRADIENT, what="the global gradient from four equal shards")
    e.close("lesson.equal", np.mean(LESSON_LOCALS_2222, axis=0), what="the global gradient from four equal shards")
    locals_ = np.random.default_rng(90223).normal(size=(e.num_devices, 3))
    e.close("hidden.equal", locals_.sum(axis=0) / e.num_devices, what="the combination of unseen equal-shard means")


@rubric.test("test-unequal-shards")
def _(e: Evidence):
    e.close("lesson.weighted", LESSON_GRADIENT, what="the global gradient from the 3 + 5 split")
    p = e.num_devices
    locals_ = np.random.default_rng(90224).normal(size=(p, 3))
    for key, sizes in [("hidden.weighted", np.arange(1, p + 1)), ("hidden.weighted_with_empty", np.arange(p))]:
        expected = (sizes[:, None] * locals_).sum(axis=0) / sizes.sum()
        e.close(key, expected, what="the count-weighted combination of unseen local means")


@rubric.test("test-masked-mean")
def _(e: Evidence):
    p = e.num_devices
    losses, mask = data.masked_tokens(seed=0, num_shards=p)
    e.close("lesson.masked_mean", masked_mean(losses, mask), what="the global masked mean")
    hl, hm = data.masked_tokens(seed=90225, num_shards=p, seqs_per_shard=3, tokens=7, empty=(-1,), scatter=True)
    e.close("hidden.masked_mean", masked_mean(hl, hm), what="the global masked mean of an unseen batch")


@rubric.test("test-shard-statistics")
def _(e: Evidence):
    p = e.num_devices
    cases = [
        ("lesson", data.masked_tokens(seed=0, num_shards=p), p),
        ("hidden", data.masked_tokens(seed=90226, num_shards=2 * p, seqs_per_shard=2, tokens=5,
                                      empty=(0, 3), scatter=True), 2 * p),
    ]
    for prefix, (losses, mask), shards in cases:
        sums, counts = block_partials(losses, mask, shards)
        where = "of the lesson batch" if prefix == "lesson" else "of an unseen batch"
        e.close(f"{prefix}.sums", sums, what=f"the per-shard sums {where}")
        counts_equal(e, f"{prefix}.counts", counts, what=f"the per-shard valid-token counts {where}")
        local_means_close(e, f"{prefix}.means", sums, counts, what=f"the per-shard local means {where}")


@rubric.test("test-combine")
def _(e: Evidence):
    e.close("lesson.combined", 18.5 / 10, what="the global mean from partial sums and counts")
    sums, counts = data.shard_partials(seed=90230, num_shards=e.num_devices)
    e.close("hidden.combined", sums.sum() / counts.sum(), what="the global mean from unseen partials")


@rubric.test("test-device-partials")
def _(e: Evidence):
    p = e.num_devices
    cases = [
        ("device", data.masked_tokens(seed=0, num_shards=p)),
        ("hidden.device", data.masked_tokens(seed=90227, num_shards=p, seqs_per_shard=2, tokens=7,
                                             empty=(0,), scatter=True)),
    ]
    for prefix, (losses, mask) in cases:
        sums, counts = block_partials(losses, mask, p)
        for key in (f"{prefix}.sums", f"{prefix}.counts"):
            e.array(key, jax=True, float_dtype=False)
            e.shard_shapes(key, (1,), devices=p)
        e.close(f"{prefix}.sums", sums, rtol=1e-5, atol=1e-5, what="the per-device sums of valid losses")
        counts_equal(e, f"{prefix}.counts", counts, what="the per-device counts of valid tokens")


@rubric.test("test-shard-map")
def _(e: Evidence):
    p = e.num_devices
    cases = [
        ("device.masked_mean", data.masked_tokens(seed=0, num_shards=p)),
        ("hidden.device.masked_mean", data.masked_tokens(seed=90228, num_shards=p, seqs_per_shard=3, tokens=5,
                                                         empty=(-1,), scatter=True)),
        ("hidden.device.masked_mean_full", data.masked_tokens(seed=90229, num_shards=p, seqs_per_shard=2, tokens=8,
                                                              empty=(), scatter=False)),
    ]
    for key, (losses, mask) in cases:
        e.array(key, shape=(), jax=True)  # on the devices, finite
        e.shard_shapes(key, (), devices=p)
        e.close(key, masked_mean(losses, mask), rtol=1e-5, what="the sharded masked mean")
        e.replicas_close(key, masked_mean(losses, mask), rtol=1e-5)
    e.require(e.number("hidden.device_count") == p, f"the notebook should use all {p} devices")
