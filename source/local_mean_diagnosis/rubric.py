"""References for local_mean_diagnosis's test cells, computed by the grader in NumPy.

Hidden inputs come from ``rubric_cases``, which the hidden tests import too.
Every reference is plain float64 NumPy arithmetic: global sums divided by
global counts, never JAX. Hidden tests use the notebook's device count and the
smaller counts of ``coursekit.meshes.sub_mesh_sizes`` (shards of the helpers,
sub-meshes of the program), so code that assumes four shards or devices fails
in a default run. A wrong value that matches a mistake the lesson warns about
is named in the message.
"""
import numpy as np

from coursekit import data
from coursekit.checks import HostCopy
from grader.submission.judge import Evidence, Mismatch, Mistake, Rubric, keeps_inputs, scaled
from grader.submission.references import Reference
from grader.programs import Expect, Input, Program

from . import rubric_cases as cases

rubric = Rubric(names={
    "lesson.masked_mean": "the global masked mean",
    "hidden.masked_mean": "the global masked mean of an unseen batch",
    "hidden.device.sums": "the per-device sums of valid losses of an unseen batch",
    "hidden.device.counts": "the per-device counts of valid tokens of an unseen batch",
    "hidden.device.masked_mean": "the sharded masked mean of an unseen batch",
    "hidden.device.full.masked_mean": "the sharded masked mean of an unseen batch without an empty device",
})

LESSON_LOCALS_2222 = [[-2.0, 1.0], [-9.0, -1.0], [-6.0, 1.0], [-4.0, -4.0]]
LESSON_LOCALS_35 = [[-2.0, 0.0], [-7.2, -1.2]]
LESSON_GRADIENT = [-5.25, -0.75]
FOUR = "the lesson's four shards (or devices)"


shard_counts = cases.shard_counts


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ np.asarray(w, dtype=np.float64) - y) / len(y)


def block_gradients(x, y, w, sizes, *, divide_by=None):
    bounds = np.cumsum(sizes)[:-1]
    blocks = zip(np.split(x, bounds), np.split(y, bounds))
    if divide_by is None:
        return np.stack([gradient(xb, yb, w) for xb, yb in blocks])
    return np.stack([gradient(xb, yb, w) * len(yb) / divide_by for xb, yb in blocks])


def masked_mean(losses, mask):
    return float(np.where(mask, losses.astype(np.float64), 0.0).sum() / mask.sum())


def block_partials(losses, mask, num_shards):
    sums = np.where(mask, losses.astype(np.float64), 0.0).reshape(num_shards, -1).sum(axis=1)
    counts = mask.reshape(num_shards, -1).sum(axis=1)
    return sums, counts


def guarded_means(sums, counts):
    return np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)


def nonzero_mean(losses, mask) -> float:
    kept = np.where(mask, losses.astype(np.float64), 0.0)
    return float(kept.sum() / max(np.count_nonzero(kept), 1))


def masked_mistakes(losses, mask, num_shards: int) -> list[Mistake]:
    """Wrong denominators and weights for a masked mean over ``num_shards`` blocks of sequences (the blocks' own
    mistakes only where the sequences split into ``num_shards`` equal blocks: any (S, T) is allowed)."""
    total = float(np.where(mask, losses.astype(np.float64), 0.0).sum())
    lengths = mask.sum(axis=1)
    sequence_sums = np.where(mask, losses.astype(np.float64), 0.0).sum(axis=1)
    keep = lengths > 0
    blocks = []
    if len(losses) % num_shards == 0:
        sums, counts = block_partials(losses, mask, num_shards)
        blocks = [Mistake(guarded_means(sums, counts).mean(), "it is the plain mean of the local means (pmean of local "
                          "means): devices with few valid tokens weigh as much as devices with many")]
    return blocks + [
        Mistake(total / num_shards, f"it divides the total by the number of devices ({num_shards}), not by the "
                "number of valid tokens"),
        Mistake(total / len(losses), "it divides the total by the number of sequences, not by the number of "
                "valid tokens"),
        Mistake((sequence_sums[keep] / lengths[keep]).mean(), "it averages per-sequence means: sequences with "
                "few valid tokens weigh as much as long ones"),
        Mistake(losses.astype(np.float64).mean(), "it averages every position: padding tokens were counted"),
        Mistake(total / mask.size, "it divides by every position: padding tokens were counted"),
    ] + ([Mistake(nonzero_mean(losses, mask), NONZERO)]
         if (nonzero := np.count_nonzero(np.where(mask, losses, 0.0))) and nonzero != mask.sum() else [])


#: the global masked mean of (losses, mask), with the mistakes named on them (``devices``: the notebook's count)
MASKED_MEAN = Reference(masked_mean, (lambda losses, mask, *, devices: masked_mistakes(losses, mask, devices),))


NONZERO = ("it counts the non-zero losses, not the targets: a target predicted perfectly (a loss of 0) is still a "
           "valid token; count the positions where mask is True")


def counts_equal(e: Evidence, key: str, expected, what: str, *, mistakes: list[Mistake] = ()) -> None:
    """Counts may be recorded as integers or floats; they must be the exact counts."""
    expected = np.asarray(expected)
    actual = e.array(key, shape=expected.shape, float_dtype=False, what=what)
    e.require(actual.dtype.kind in "iuf", f"{what}: expected numbers, got dtype {actual.dtype}")
    if not np.array_equal(actual.astype(np.float64), expected.astype(np.float64)):
        said = {m.says for m in mistakes if np.array_equal(actual.astype(np.float64), m.value)}
        hint = next(iter(said)) if len(said) == 1 else None  # two mistakes that agree here: neither is claimed
        e.require(False, f"{what} does not match the host NumPy reference" + (f": {hint}" if hint else ""))


def local_means_close(e: Evidence, key: str, sums, counts, what: str) -> None:
    """Local means of non-empty shards match; an empty shard's mean only has to be finite."""
    raw = e.get(key, what=what)
    e.require(raw.kind not in ("array", "jax_array") or np.all(np.isfinite(raw.value.astype(np.float64))),
              f"{what}: a local mean is NaN or infinite: a shard without valid tokens has count 0, so its "
              "mean must be guarded (0.0), never sum / 0")
    actual = e.array(key, shape=np.shape(sums), what=what)
    nonempty = np.asarray(counts) > 0
    expected = np.asarray(sums)[nonempty] / np.asarray(counts)[nonempty]
    e.require(np.allclose(actual[nonempty].astype(np.float64), expected, rtol=1e-5, atol=1e-6),
              f"{what} does not match the host NumPy reference")


@rubric.test("test-two-averages", names={
    "example.global_mean": "the global mean of the two-shard example",
    "example.mean_of_local_means": "the mean of local means of the two-shard example",
})
def judge_two_averages(e: Evidence):
    e.close("example.global_mean", 2.0, mistakes=[Mistake(2.5, "this is the mean of local means: the global "
                                                                "mean weighs every example once")])
    e.close("example.mean_of_local_means", 2.5, mistakes=[Mistake(2.0, "this is the global mean: the mean of "
                                                                       "local means weighs every shard once")])
    for count in shard_counts(e.num_devices):
        shards = cases.ragged(count)
        e.check(f"hidden.{count}.global_mean", GLOBAL_MEAN, (shards,),
                what=f"the global mean of {count} unseen shard(s)")
        e.check(f"hidden.{count}.mean_of_local_means", MEAN_OF_LOCAL_MEANS, (shards,),
                what=f"the mean of local means of {count} unseen shard(s)")


def _global_mean(shards):
    return np.concatenate(shards).mean()


def _mean_of_local_means(shards):
    return np.mean([s.mean() for s in shards])


def _divided_by_four(what: str, total):
    """The sum divided by the lesson's 4 (a hard-coded shard count), on any other number of shards."""
    return lambda shards: [Mistake(total(shards) / 4, f"it divides by 4 ({FOUR}), not by the {what}")] \
        if len(shards) != 4 else []


GLOBAL_MEAN = Reference(_global_mean, (
    lambda shards: Mistake(_mean_of_local_means(shards), "this is the mean of local means: the global mean weighs "
                                                         "every example once"),
    _divided_by_four("number of examples", lambda shards: np.concatenate(shards).sum())))
MEAN_OF_LOCAL_MEANS = Reference(_mean_of_local_means, (
    _divided_by_four("number of shards", lambda shards: sum(s.mean() for s in shards)),
    lambda shards: Mistake(_global_mean(shards), "this is the global mean: the mean of local means weighs every "
                                                 "shard once")))


@rubric.test("test-local-gradients", names={
    "lesson.local_gradients": "the four local mean gradients of the lesson batch",
    "lesson.local_gradients_3_5": "the local mean gradients of the 3 + 5 split",
})
def judge_local_gradients(e: Evidence):
    x, y = data.lesson_batch()
    w = np.zeros(2)

    e.check("lesson.local_gradients", LOCAL_GRADIENTS, (x, y, w, [2, 2, 2, 2]))
    e.close("lesson.local_gradients", LESSON_LOCALS_2222)
    e.check("lesson.local_gradients_3_5", LOCAL_GRADIENTS, (x, y, w, [3, 5]))
    for count in shard_counts(e.num_devices):
        e.check(f"hidden.{count}.local_gradients", LOCAL_GRADIENTS, cases.local_gradient_batch(count), rtol=1e-5,
                atol=1e-6, what=f"local mean gradients of {count} unequal block(s) of an unseen batch")


def _block_mistakes(x, y, w, sizes) -> list[Mistake]:
    found = [Mistake(block_gradients(x, y, w, sizes, divide_by=len(y)),
                     "each block's gradient is divided by the global count N, not by its own count: a local "
                     "mean gradient divides by the rows its block holds")]
    if len(y) % len(sizes) == 0:
        equal = [len(y) // len(sizes)] * len(sizes)
        found.append(Mistake(block_gradients(x, y, w, equal), "the blocks ignore sizes: block i must hold "
                                                              "the next sizes[i] rows"))
    return found


LOCAL_GRADIENTS = Reference(block_gradients, (_block_mistakes,))


def _equal_mistakes(locals_) -> list[Mistake]:
    k = len(locals_)
    mean = np.mean(locals_, axis=0)
    return scaled(mean, {
        float(k): f"the {k} local means were summed: with p shards that is p times the global gradient",
        k / 4: f"it divides the sum of {k} local means by 4 ({FOUR}), not by the number of shards",
    })


def _wrong_axis(k: int, d: int) -> dict:
    return {(k,): "it averages over the wrong axis: combine the shards (axis 0) and keep the "
                  f"{d} gradient components"}


@rubric.test("test-equal-shards", names={
    "lesson.equal": "the global gradient from four equal shards",
})
def judge_equal_shards(e: Evidence):
    e.close("lesson.equal", LESSON_GRADIENT, mistakes=_equal_mistakes(np.array(LESSON_LOCALS_2222)),
            shape_mistakes=_wrong_axis(4, 2))
    for count in shard_counts(e.num_devices):
        e.check(f"hidden.{count}.equal", EQUAL, (cases.equal_locals(count),),
                what=f"the combination of {count} unseen equal-shard means", shape_mistakes=_wrong_axis(count, 3))


EQUAL = Reference(lambda locals_: locals_.sum(axis=0) / len(locals_), (_equal_mistakes,))


def _weighted(locals_, sizes):
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.tensordot(sizes, locals_, axes=1) / sizes.sum()


def _weighted_mistakes(locals_, sizes) -> list[Mistake]:
    locals_, sizes = np.asarray(locals_, dtype=np.float64), np.asarray(sizes, dtype=np.float64)
    return [
        Mistake(locals_.mean(axis=0), "it is the plain mean of the local means: weigh each by its count"),
        Mistake(np.tensordot(sizes, locals_, axes=1) / len(sizes), "it divides by the number of shards, not by "
                                                                   "the total count"),
        Mistake(np.floor(np.tensordot(sizes, locals_, axes=1) / sizes.sum()), "integer (floor) division: // "
                "drops the fraction of the weighted mean; divide with /"),
    ] + ([Mistake(np.tensordot(sizes, locals_, axes=1) / 4, f"it divides by 4 ({FOUR}), not by the total count")]
         if len(sizes) != 4 else [])


WEIGHTED = Reference(_weighted, (_weighted_mistakes,))
NUMBER_SHAPE = "the docstring promises a single number for (k,) local means: the code handles only (k, d) input"


@rubric.test("test-unequal-shards", names={
    "lesson.weighted": "the global gradient from the 3 + 5 split",
    "lesson.weighted_number": "weighted_gradient of (k,) local means (the two-shard example)",
})
def judge_unequal_shards(e: Evidence):
    e.close("lesson.weighted", LESSON_GRADIENT, mistakes=_weighted_mistakes(LESSON_LOCALS_35, [3, 5]))
    e.close("lesson.weighted_number", 2.0, mistakes=_weighted_mistakes([1.0, 4.0], [2, 1]),
            shape_mistakes={(2,): NUMBER_SHAPE, (2, 2): NUMBER_SHAPE})
    for count in shard_counts(e.num_devices):
        locals_ = cases.unequal_locals(count)
        sizes = np.arange(1, count + 1)
        e.check(f"hidden.{count}.weighted", WEIGHTED, (locals_, sizes),
                what=f"the count-weighted combination of {count} unseen local means")
        e.check(f"hidden.{count}.weighted_number", WEIGHTED, (locals_[:, 1], sizes),
                what=f"the count-weighted combination of {count} unseen (k,) local means",
                shape_mistakes={(count,): NUMBER_SHAPE, (count, count): NUMBER_SHAPE})
        if count > 1:
            e.check(f"hidden.{count}.weighted_with_empty", WEIGHTED, (locals_, np.arange(count)),
                    what=f"the count-weighted combination of {count} unseen local means with an empty shard")


def tokens_words(losses, mask, devices: int | None = None) -> str:
    """A drawn batch of token losses in the learner's words: its shape, its mesh and what is special about it."""
    seqs, tokens = mask.shape
    special = [text for text, holds in [
        ("a sequence without a valid token", bool((mask.sum(axis=1) == 0).any())),
        ("a device without a valid token", bool(devices and (mask.reshape(devices, -1).sum(axis=1) == 0).any())),
        ("a valid token whose loss is exactly 0", bool(((losses == 0) & mask).any())),
    ] if holds]
    return (f"an unseen batch of {seqs} sequence(s) x {tokens} token position(s)"
            + (f" on a mesh of {devices} device(s)" if devices else "") + (f" ({'; '.join(special)})" if special else ""))


@rubric.test("test-masked-mean")
def judge_masked_mean(e: Evidence):
    p = e.num_devices
    losses, mask = data.masked_tokens(seed=0, num_shards=p)
    e.check("lesson.masked_mean", MASKED_MEAN, (losses, mask), devices=p)
    unexplained = None  # a drawn case may not tell two mistakes apart: the other may, and names it then
    for prefix, (losses, mask) in cases.drawn_masked_tokens(e.draw):  # over masked_token_mean's contract
        try:
            e.check(f"{prefix}.masked_mean", MASKED_MEAN, (losses, mask), devices=p,
                    what=f"the global masked mean of {tokens_words(losses, mask)}")
        except Mismatch as failure:
            if failure.named:
                raise
            unexplained = unexplained or failure
    if unexplained:
        raise unexplained


def _statistics(e: Evidence, prefix: str, losses, mask, shards: int, where: str):
    sums, counts = block_partials(losses, mask, shards)
    e.close(f"{prefix}.sums", sums, what=f"the per-shard sums {where}", mistakes=[
        Mistake(losses.astype(np.float64).reshape(shards, -1).sum(axis=1), "padding losses were summed too: add "
                                                                           "only the valid tokens' losses")])
    counts_equal(e, f"{prefix}.counts", counts, what=f"the per-shard valid-token counts {where}", mistakes=[
        Mistake(np.full(shards, mask.size // shards, dtype=np.float64), "padding positions were counted: count "
                                                                        "only the positions where mask is True"),
        Mistake(np.full(shards, len(mask) // shards, dtype=np.float64), "sequences were counted, not valid tokens")])
    local_means_close(e, f"{prefix}.means", sums, counts, what=f"the per-shard local means {where}")


@rubric.test("test-shard-statistics", names={
    "lesson.sums": "the per-shard sums of the lesson batch",
    "lesson.counts": "the per-shard valid-token counts of the lesson batch",
    "lesson.means": "the per-shard local means of the lesson batch",
})
def judge_shard_statistics(e: Evidence):
    p = e.num_devices
    _statistics(e, "lesson", *data.masked_tokens(seed=0, num_shards=p), p, "of the lesson batch")
    for count in cases.statistics_counts(p):
        losses, mask = cases.statistics_tokens(count, p)
        _statistics(e, f"hidden.{count}", losses, mask, count, f"of an unseen batch in {count} shard(s)")


def _combine_mistakes(sums, counts) -> list[Mistake]:
    sums, counts = np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    return [
        Mistake(sums.sum() / len(sums), f"it divides the total by the number of shards ({len(sums)}), not by the "
                                        "total count"),
        Mistake(guarded_means(sums, counts).mean(), "it is the plain mean of the local means"),
    ] + ([Mistake(sums.sum() / 4, f"it divides the total by 4 ({FOUR}), not by the total count")]
         if len(sums) != 4 else [])


COMBINED = Reference(lambda sums, counts: sums.sum() / counts.sum(), (_combine_mistakes,))


@rubric.test("test-combine", names={
    "lesson.combined": "the global mean from partial sums and counts",
})
def judge_combine(e: Evidence):
    e.close("lesson.combined", 18.5 / 10, mistakes=_combine_mistakes([2.0, 0.0, 12.0, 4.5], [1, 0, 6, 3]))
    for prefix, (sums, counts) in cases.drawn_partials(e.draw):  # over combine_partials' contract
        special = [text for text, holds in [(f"{int((counts == 0).sum())} of them empty", bool((counts == 0).any())),
                                            ("a non-empty one whose sum is 0", bool(((sums == 0) & (counts > 0)).any())),
                                            ("counts as floats", counts.dtype.kind == "f")] if holds]
        e.check(f"{prefix}.combined", COMBINED, (sums, counts),
                what=f"the global mean from {len(sums)} unseen partial(s)" + (f" ({'; '.join(special)})"
                                                                               if special else ""))


def _partials_cases(p: int) -> list[tuple[str, tuple]]:
    return [("device", data.masked_tokens(seed=0, num_shards=p)),
            ("hidden.device", cases.device_partials_tokens(p))]


def nonzero_counts(losses, mask, shards: int):
    """Per-shard counts of the non-zero losses left after masking (the NONZERO mistake)."""
    return np.count_nonzero(np.where(mask, losses, 0.0).reshape(shards, -1), axis=1).astype(np.float64)


@rubric.test("test-device-partials", names={
    "device.sums": "the per-device sums of valid losses",
    "device.counts": "the per-device counts of valid tokens",
})
def judge_device_partials(e: Evidence):
    p = e.num_devices
    for prefix, (losses, mask) in _partials_cases(p):
        sums, counts = block_partials(losses, mask, p)
        for key in (f"{prefix}.sums", f"{prefix}.counts"):
            e.array(key, jax=True, float_dtype=False)
            e.shard_shapes(key, (1,), devices=p)
        e.close(f"{prefix}.sums", sums, rtol=1e-5, atol=1e-5, mistakes=[
            Mistake(losses.astype(np.float64).reshape(p, -1).sum(axis=1),
                    "padding losses were summed too: add only the valid tokens' losses"),
            Mistake(guarded_means(sums, counts), "these are local means, not local sums: divide once, at the end")])
        counts_equal(e, f"{prefix}.counts", counts, what=e.name(f"{prefix}.counts"), mistakes=[
            Mistake(np.full(p, mask.size // p, dtype=np.float64), "padding positions were counted: count only "
                                                                  "the positions where mask is True"),
            Mistake(nonzero_counts(losses, mask, p), NONZERO.replace("it counts", "these count"))])


def finite_mesh_result(e: Evidence, key: str, maker: str, devices: int, nan: str) -> str:
    """A value a test recorded from ``maker``'s program on a mesh of ``devices``: there (a smaller mesh's result
    missing means the program ignored the mesh it was given) and not NaN (``nan`` says why it would be); returns the
    value's name in the learner's words."""
    what = e.names.get(key) or f"{maker} on a mesh of {devices} device(s)"
    e.require(e.has(key) or devices == e.num_devices, f"{what}: no result: the program did not run there (does it "
                                                      "use the mesh it is given, and not a mesh of the lesson's four "
                                                      "devices?)")
    raw = e.get(key, what=what)
    e.require(raw.kind not in ("array", "jax_array") or np.all(np.isfinite(raw.value.astype(np.float64))),
              f"{what}: {nan}")
    return what


# Watched in the kernel (coursekit.checks.host_round_trip): under jax.jit device_get hands back its traced arguments,
# so a function that copies the batch to the host and places it back exports as the psum program.
HOST_ROUND_TRIP = ("your sharded masked mean moves the placed batch through the host: on every call it copies the "
                   "losses or the mask to host memory (jax.device_get, np.asarray, printing them) or places NumPy "
                   "arrays back with jax.device_put, so the whole batch is gathered in one place: each device should "
                   "reduce its own block inside the shard_map program, and only the sums and counts cross devices")


# The masked mean's program: psum does the work inside one shard_map region (gathering everything first is not
# the lesson), its result replicated, and no collective carries the tokens themselves.
PSUM = "{what}: the program should psum over the devices inside jax.shard_map"
PSUM_IN_ONE_REGION = Expect(outputs=(True,), region="all_reduce", no_data_moved=True, says=(
    ("no_region", PSUM), ("missing", PSUM),
    ("not_one_region", PSUM + ", and compute everything there: outside the per-device program there should be nothing "
                              "but the placement of inputs and results (a computation beside the shard_map is "
                              "partitioned by the compiler, which adds collectives of its own)"),
    ("other", "{what}: the program also communicates with {other}: each device should reduce its own block to a sum "
              "and a count, and psum should combine them (nothing else crosses devices)"),
    ("moves_data", "{what}: the psum carries the batch itself, not partial results: each device should reduce its own "
                   "block to a sum and a count, and psum should combine those (a psum of buffers the size of the "
                   "whole batch, each device filling in its block, copies the data to every device)")))


@rubric.programs("test-shard-map")
def programs_shard_map(p: int):
    losses, mask = cases.shard_map_tokens(p)[-1][1]  # the exported call's example: the last case
    return [Program("program.masked_mean", p, (Input(losses.shape, ("data", None)),
                                               Input(mask.shape, ("data", None), "bool")), expect=PSUM_IN_ONE_REGION)]


def _sharded_case(e: Evidence, prefix: str, losses, mask, devices: int, words: dict) -> None:
    """One case of test-shard-map: the recorded sharded masked mean against the NumPy reference, with its mistakes."""
    key = f"{prefix}.masked_mean"
    nan = ("the result is NaN: a local count of zero (the empty device) was divided by; psum the sums and the "
           "counts, then divide once")
    if key in words:
        e.names[key] = words[key]
    what = finite_mesh_result(e, key, "make_sharded_masked_mean", devices, nan)
    e.array(key, shape=(), jax=True, what=what)
    reference = masked_mean(losses, mask)
    mistakes = masked_mistakes(losses, mask, devices) + scaled(reference, {
        devices / 4: f"scaled by {devices}/4 on a mesh of {devices} device(s): the program assumes four devices"})
    mixed_up = {  # one of the two partials reduced once less or once more than the other (the same values)
        1 / devices: f"{devices} times too small: the counts were reduced {devices} times more than the sums: "
                     "either the local sums were averaged (pmean) but the counts summed (psum), or the counts "
                     "were reduced twice (a psum of an already summed count): psum each once, then divide once",
        float(devices): f"{devices} times too large: the sums were reduced {devices} times more than the counts: "
                        "either the local counts were averaged (pmean) but the sums summed (psum), or the sums "
                        "were reduced twice (a psum of an already summed sum): psum each once, then divide once"}
    # where a factor is also the four-device one (a mesh of 2), that diagnosis stays the only one
    mistakes += scaled(reference, {f: says for f, says in mixed_up.items() if not np.isclose(f, devices / 4)})
    # (not judged against the learner's own per-device counts: a relief that did so let counts already charged
    # for another reason excuse a program's own miscount, 14 against 11 points; tests/attacks/local_mean_diagnosis)
    actual = e.close(key, reference, rtol=1e-5, what=what, mistakes=mistakes)
    e.shard_shapes(key, (), devices=devices, what=what)
    e.replicas_close(key, actual, rtol=1e-6, atol=1e-7, what=what, against="the result's own value")


@rubric.test("test-shard-map", names={
    "device.masked_mean": "the sharded masked mean",
    "hidden.device_count": "the number of devices",
})
def judge_shard_map(e: Evidence):
    p = e.num_devices
    judged = [("device", data.masked_tokens(seed=0, num_shards=p), p)]
    judged += [(prefix, tokens, p) for prefix, tokens in cases.shard_map_tokens(p)]
    drawn = cases.drawn_shard_map_tokens(p, e.draw)  # over make_sharded_masked_mean's contract, this learner's draw
    judged += [(prefix, tokens, size) for prefix, size, tokens in drawn]
    words = {f"{prefix}.masked_mean": f"the sharded masked mean of {tokens_words(*tokens, size)}"
             for prefix, size, tokens in drawn}
    unexplained = None  # a drawn case may not tell two mistakes apart: another drawn case may, and names it then
    for prefix, (losses, mask), devices in judged:
        try:
            _sharded_case(e, prefix, losses, mask, devices, words)
        except Mismatch as failure:
            if failure.named or f"{prefix}.masked_mean" not in words:  # the fixed cases (Validate's) say it at once
                raise
            unexplained = unexplained or failure
    if unexplained:
        raise unexplained
    e.require(e.number("hidden.device_count") == p, f"the notebook should use all {p} devices")
    e.require(e.number("hidden.host_round_trip",
                       what="the host transfers of your sharded masked mean") == HostCopy.NONE,
              HOST_ROUND_TRIP)
    # The program itself, exported by the kernel and run by the grader on tokens it drew.
    what = "your sharded masked mean, run by the grader on tokens it drew"
    run = e.program_expected("program.masked_mean", what=what)  # PSUM_IN_ONE_REGION
    losses, mask = run.inputs
    e.program_check("program.masked_mean", 0, MASKED_MEAN, (losses, mask), rtol=1e-5, what=what,
                    devices=p)  # (the grader's draws have no loss of exactly 0)


# -- gradient accumulation --------------------------------------------------------------------------------------
def block_numerators(x, y, mask, w, devices: int):
    """Per (micro-batch, device) block: the gradient of the summed valid squared errors (M, p, d) and the count
    (M, p), in float64."""
    x64 = x.astype(np.float64)
    residual = np.where(mask, x64 @ np.asarray(w, dtype=np.float64) - y, 0.0)
    numerators = 2 * np.einsum("mst,mstd->msd", residual, x64)
    m, s = mask.shape[:2]
    return (numerators.reshape(m, devices, s // devices, -1).sum(axis=2),
            mask.reshape(m, devices, -1).sum(axis=2).astype(np.float64))


def accumulated(x, y, mask, w):
    numerators, counts = block_numerators(x, y, mask, w, 1)
    return numerators.sum(axis=(0, 1)) / counts.sum()


def _accumulation_mistakes(x, y, mask, w, *, devices: int, **_) -> list[Mistake]:
    numerators, counts = block_numerators(x, y, mask, w, devices)
    total, micro = numerators.sum(axis=(0, 1)), x.shape[0]
    right = total / counts.sum()
    per_micro = numerators.sum(axis=1), counts.sum(axis=1)  # each micro-batch over every device
    micro_means = np.where(per_micro[1][:, None] > 0, per_micro[0] / np.maximum(per_micro[1], 1)[:, None], 0.0)
    block_means = np.where(counts[..., None] > 0, numerators / np.maximum(counts, 1)[..., None], 0.0)
    nonempty = per_micro[1] > 0
    named = [
        Mistake(block_means.mean(axis=(0, 1)), SHIPPED),
        Mistake(micro_means.mean(axis=0), MEAN_OF_MEANS),
    ] + ([Mistake(micro_means[nonempty].mean(axis=0), MEAN_OF_MEANS + " (leaving an empty micro-batch out does not "
                  "change that: the others still weigh the same whatever their counts)")] if nonempty.any() else []) + [
        Mistake(total / micro, f"it divides the summed gradient by the number of micro-batches ({micro}), not by "
                               "the number of valid tokens of the whole batch"),
        Mistake(total / mask.size, "it divides by every token position: padding positions were counted; count "
                                   "only the positions where mask is True"),
        Mistake(total / (micro * mask.shape[1]), "it divides by the number of sequences, not by the number of "
                                                 "valid tokens"),
        Mistake(block_means.sum(axis=(0, 1)) / counts.sum(), "each block was divided twice: once by its own count "
                "(microbatch_partials returned the gradient of its mean loss, not of its sum) and again by the "
                "global count"),
    ]
    if devices > 1:
        named.append(Mistake(devices * right, TWICE.format(p=devices)))
    # a device's count guarded against zero before the psum: each device without a valid token counts 1
    empty_devices = int((counts.sum(axis=0) == 0).sum())
    if empty_devices:
        named.append(Mistake(total / (counts.sum() + empty_devices), GUARDED_DEVICES.format(n=empty_devices)))
    if micro > 3:  # a loop of the lesson's fixed length: the first three micro-batches only
        first = block_numerators(x[:3], y[:3], mask[:3], w, devices)
        if first[1].sum():
            named.append(Mistake(first[0].sum(axis=(0, 1)) / first[1].sum(), FIRST_THREE.format(m=micro)))
    residual = np.where(mask, x.astype(np.float64) @ np.asarray(w, dtype=np.float64) - y, 0.0)
    nonzero = int(np.count_nonzero(residual))
    if nonzero and nonzero != counts.sum():
        named.append(Mistake(total / nonzero, NONZERO_ERRORS))
    return named


SHIPPED = ("it is the mean of micro-batch means, averaged over the devices (the accumulation as it shipped): each "
           "micro-batch's gradient was divided by its own count of valid tokens; add the gradient sums and the "
           "counts over every micro-batch and device, and divide once")
MEAN_OF_MEANS = ("it is the mean of micro-batch means: each micro-batch's gradient was divided by its own count of "
                 "valid tokens, so a short micro-batch's tokens weigh more; add the sums and the counts, divide once")
TWICE = ("{p} times too large: the gradient was summed over the devices twice: jax.grad with respect to the replicated "
         "w already psums it over the devices (the transpose of using one w on every device), and psum added the "
         "devices again; differentiate with respect to w_local = lax.pcast(w, \"data\", to=\"varying\")")
GUARDED_DEVICES = ("its denominator is the count plus {n}, one for each device without a valid token in the whole "
                   "step: a device's count was guarded against zero (jnp.maximum(count, 1)) before the psum; psum the "
                   "counts as they are (a batch always holds a valid token, so the global count is never zero) and "
                   "divide once")
FIRST_THREE = ("it is the gradient of the first 3 micro-batches of {m}: the loop runs the lesson's 3 micro-batches, "
               "not the batch's; loop over every micro-batch of x (lax.scan over (x, y, mask) does)")
NONZERO_ERRORS = ("it counts the tokens whose error is non-zero, not the valid tokens: a target predicted exactly (an "
                  "error of 0) is still a valid token; count the positions where mask is True")
ACCUMULATED = Reference(accumulated, (_accumulation_mistakes,))


def _partials_mistakes(x, y, mask, w) -> list[Mistake]:
    numerator, count = (v[0, 0] for v in block_numerators(x[None], y[None], mask[None], w, 1))
    return [Mistake(numerator / count, "this is the gradient of the block's mean loss: return the gradient of the "
                                       "SUM and the count; the one division comes after the psum")] if count else []


PARTIAL_GRADIENT = Reference(lambda x, y, mask, w: block_numerators(x[None], y[None], mask[None], w, 1)[0][0, 0],
                             (_partials_mistakes,))


def _block_words(x, mask) -> str:
    """A block (or a micro-batch of one) in the learner's words: its shape, and what is special about it."""
    seqs, tokens, features = x.shape[-3:]
    return f"{seqs} sequence(s) of {tokens} token position(s), {features} feature(s)"


def _zero_errors(x, y, mask, w) -> int:
    residual = np.where(mask, x.astype(np.float64) @ np.asarray(w, dtype=np.float64) - y, 0.0)
    return int(mask.sum() - np.count_nonzero(residual))


@rubric.test("test-microbatch-partials", names={
    "partials.gradient_sum": "the gradient sum of one block of the lesson batch",
    "partials.count": "the valid-token count of one block of the lesson batch",
    "hidden.partials.gradient_sum": "the gradient sum of an unseen block",
    "hidden.partials.count": "the valid-token count of an unseen block",
    "hidden.partials.empty.gradient_sum": "the gradient sum of an unseen block that holds only padding",
    "hidden.partials.empty.count": "the valid-token count of an unseen block that holds only padding",
})
def judge_microbatch_partials(e: Evidence):
    x, y, mask, w = data.accumulation_batch(seed=0, num_shards=e.num_devices, empty=(1,))
    block = slice(0, x.shape[1] // e.num_devices)
    cases_ = [("partials", (x[0, block], y[0, block], mask[0, block], w), None)]
    cases_ += [(prefix, block_, None) for prefix, block_ in cases.partials_blocks()]
    for prefix, case, block_ in cases.drawn_partials_blocks(e.draw):  # over microbatch_partials' contract
        bx, _, bm, _ = block_
        special = ("; it holds only padding" if not bm.any() else
                   "; a valid token's error is exactly 0" if _zero_errors(*block_) else "")
        cases_.append((prefix, block_, f"an unseen block of {_block_words(bx, bm)}{special}"))
    for prefix, (bx, by, bm, bw), drawn in cases_:
        e.check(f"{prefix}.gradient_sum", PARTIAL_GRADIENT, (bx, by, bm, bw), rtol=1e-5, atol=1e-5,
                what=f"the gradient sum of {drawn}" if drawn else None)
        residual = np.where(bm, bx.astype(np.float64) @ np.asarray(bw, dtype=np.float64) - by, 0.0)
        miscounts = [Mistake(np.float64(bm.size), "padding positions were counted: count only the positions where "
                                                  "mask is True"),
                     Mistake(np.float64(len(bm)), "sequences were counted, not valid tokens")]
        if np.count_nonzero(residual) != bm.sum():
            miscounts.append(Mistake(np.float64(np.count_nonzero(residual)), NONZERO_ERRORS))
        counts_equal(e, f"{prefix}.count", np.asarray(bm.sum(), dtype=np.float64),
                     what=f"the valid-token count of {drawn}" if drawn else e.name(f"{prefix}.count"),
                     mistakes=miscounts)


REDUCES_OFTEN = "{what}: its psums carry more than the gradient sum and its count, or there are more than two of them"
ACCUMULATE_ONCE = Expect(outputs=(True,), region="all_reduce", reduce_once=True, collectives=2, no_data_moved=True,
                         says=(
    ("no_region", "{what}: the program should psum over the devices inside jax.shard_map"),
    ("missing", "{what}: the program should psum the gradient sum and the count over the devices inside "
                "jax.shard_map"),
    ("in_loop", "{what}: the program reduces across devices inside its loop over micro-batches, once per "
                "micro-batch (a psum in the scan's body, or jax.grad with respect to the replicated w, which psums "
                "the gradient): keep each device's sums local while accumulating (differentiate with respect to "
                "lax.pcast(w, \"data\", to=\"varying\")) and psum once, after the scan"),
    ("reduces_often", REDUCES_OFTEN)))


def reduces_often(run, what: str) -> str:
    """Why a program that reduces in no loop still reduces more than once, from what its run shows: the number of
    collectives it writes, and whether they carry more than the result and its count (``run.carries_more``)."""
    counts = [n for n in run.collectives.values() if type(n) is int and n >= 0]
    written = sum(counts) if len(counts) == len(run.collectives) else None
    if written is not None and written <= 2:  # one reduction (two psums at most), of too much
        return (f"{what}: it reduces once, after the loop, but its psum carries more than the gradient sum and its "
                "count: more bytes cross the devices than one gradient and one count (every micro-batch's partial "
                "results, kept apart until the psum, cost as much as a psum per micro-batch); add them up on each "
                "device first, then psum the one gradient sum and the one count")
    many = f"{written} reductions (psums)" if written is not None else "more reductions (psums) than it can count"
    return (f"{what}: it writes {many} across devices and there are more than two of them, where one psum of the "
            "gradient sum and one of the count are enough: the devices reduce several times per step; accumulate "
            "locally and psum once, after the loop")


@rubric.programs("test-accumulation")
def programs_accumulation(p: int):
    x, y, mask, w = cases.accumulation_batches(p)[-1][1]  # the exported call's example: the last case
    return [Program("program.accumulation", p, (Input(x.shape, (None, "data", None, None)),
                                                Input(y.shape, (None, "data", None)),
                                                Input(mask.shape, (None, "data", None), "bool"),
                                                Input(w.shape, ())), expect=ACCUMULATE_ONCE)]


def _batch_words(x, mask, devices: int) -> str:
    """A drawn accumulation batch in the learner's words: its shape, its mesh and its empty parts."""
    micro, seqs, tokens, features = x.shape
    blocks = mask.reshape(micro, devices, -1).sum(axis=2)
    empty_micro, empty_device = blocks.sum(axis=1) == 0, blocks.sum(axis=0) == 0
    special = [text for text, holds in [
        ("a micro-batch of padding only", bool(empty_micro.any())),
        ("a device without a valid token in the whole step", bool(empty_device.any())),
        ("a device without a valid token in one micro-batch",
         bool(((blocks == 0) & ~empty_micro[:, None] & ~empty_device[None, :]).any())),
    ] if holds]
    return (f"an unseen batch of {micro} micro-batch(es) of {seqs} sequence(s) x {tokens} token position(s), "
            f"{features} feature(s), on a mesh of {devices} device(s)"
            + (f" ({'; '.join(special)})" if special else ""))


@rubric.test("test-accumulation", names={
    "accumulation.gradient": "the accumulated gradient of the lesson batch",
    "hidden.accumulation.empty.gradient": "the accumulated gradient of an unseen batch with an empty micro-batch",
    "hidden.accumulation.gradient": "the accumulated gradient of an unseen batch",
})
def judge_accumulation(e: Evidence):
    p = e.num_devices
    judged = [("accumulation", data.accumulation_batch(seed=0, num_shards=p, empty=(1,)), p, None)]
    judged += [(prefix, batch, p, None) for prefix, batch in cases.accumulation_batches(p)]
    _accumulated_values(e, judged)
    what = "your accumulated gradient, run by the grader on a batch it drew"
    try:  # the program's structure before the drawn cases: a loop of psums is told so whatever the batch
        run = e.program_expected("program.accumulation", what=what)  # ACCUMULATE_ONCE
    except Mismatch as failure:  # reduces more than once: say how, from what the run shows
        if str(failure) != REDUCES_OFTEN.replace("{what}", what):
            raise
        raise Mismatch(reduces_often(e.program("program.accumulation", what=what), what)) from None
    drawn = [(prefix, batch, size, f"the accumulated gradient of {_batch_words(batch[0], batch[2], size)}")
             for prefix, size, batch in cases.drawn_accumulation_batches(p, e.draw)]  # this learner's draw
    _accumulated_values(e, drawn)
    e.program_check("program.accumulation", 0, ACCUMULATED, tuple(run.inputs), rtol=1e-4, atol=1e-5, what=what,
                    devices=p)


def _accumulated_values(e: Evidence, judged: list) -> None:
    """Each (record prefix, batch, mesh size, words or None) of test-accumulation against the NumPy gradient."""
    for prefix, batch, devices, what in judged:
        key, d = f"{prefix}.gradient", batch[3].size
        nan = ("the gradient is NaN: a micro-batch or a device without valid tokens was divided by its own count of "
               "zero; add sums and counts, divide once at the end")
        if what is None:
            what = finite_mesh_result(e, key, "make_accumulated_gradient", devices, nan)
        else:  # a drawn case the cell did not reach says why (the cell that raised), never a guessed cause
            raw = e.get(key, what=what)
            e.require(raw.kind not in ("array", "jax_array") or np.all(np.isfinite(raw.value.astype(np.float64))),
                      f"{what}: {nan}")
        shapes = {(2,): "it has 2 values, the lesson's number of features, not the batch's: size the carry from w "
                        "(jnp.zeros_like(w_local)), never from the lesson's data"} if d != 2 else None
        e.array(key, shape=(d,), jax=True, what=what, shape_mistakes=shapes)
        actual = e.check(key, ACCUMULATED, batch, rtol=1e-4, atol=1e-5, what=what, devices=devices)  # off by how much
        e.shard_shapes(key, (d,), devices=devices, what=what)
        e.replicas_close(key, actual, rtol=1e-6, atol=1e-7, what=what, against="the result's own value")


# Each function the tests call with the caller's arrays is charged at its own test if it writes into them.
for _grade_id, _function, _arguments in [
    ("test-two-averages", "two_averages", ["shards"]),
    ("test-local-gradients", "local_mean_gradients", ["x", "y", "w", "sizes"]),
    ("test-equal-shards", "equal_shard_gradient", ["local_gradients"]),
    ("test-unequal-shards", "weighted_gradient", ["local_gradients", "sizes"]),
    ("test-masked-mean", "masked_token_mean", ["token_losses", "mask"]),
    ("test-shard-statistics", "shard_statistics", ["token_losses", "mask", "num_shards"]),
    ("test-combine", "combine_partials", ["sums", "counts"]),
]:
    keeps_inputs(rubric, _grade_id, f"inputs.{_function}", _function, _arguments)
