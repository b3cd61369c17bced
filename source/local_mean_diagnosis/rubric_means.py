"""References for local_mean_diagnosis's test cells up to the sharded masked mean, computed by the grader in NumPy.

Hidden inputs and the keys the test cells record under (with their words) come from ``rubric_cases``, which the
hidden tests import too. Every reference is plain float64 NumPy arithmetic: global sums divided by global counts,
never JAX. Hidden tests use the notebook's device count and the smaller counts of ``coursekit.meshes.sub_mesh_sizes``
(shards of the helpers, sub-meshes of the program), so code that assumes four shards or devices fails in a default
run. A wrong value that matches a mistake the lesson warns about is named in the message.
"""
import numpy as np

from coursekit import data
from grader.rubric import (Evidence, Expect, HostCopy, Input, Mismatch, Program, Reference, Rubric, factors, mistake)

from . import rubric_cases as cases
from . import rubric_keys as keys

rubric = Rubric()

LESSON_LOCALS_2222 = [[-2.0, 1.0], [-9.0, -1.0], [-6.0, 1.0], [-4.0, -4.0]]
LESSON_LOCALS_35 = [[-2.0, 0.0], [-7.2, -1.2]]
LESSON_GRADIENT = [-5.25, -0.75]
EXAMPLE = [np.array([0.5, 1.5]), np.array([4.0])]  # the two-shard example
FOUR = "the lesson's four shards (or devices)"
NONZERO = ("it counts the non-zero losses, not the targets: a target predicted perfectly (a loss of 0) is still a "
           "valid token; count the positions where mask is True")


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


def _total(losses, mask) -> float:
    return float(np.where(mask, losses.astype(np.float64), 0.0).sum())


def _nonzero_mean(losses, mask, **_):
    nonzero = np.count_nonzero(np.where(mask, losses, 0.0))
    return _total(losses, mask) / max(nonzero, 1) if nonzero and nonzero != mask.sum() else None


def _sequence_means(losses, mask, **_):
    lengths, keep = mask.sum(axis=1), mask.sum(axis=1) > 0
    return (np.where(mask, losses.astype(np.float64), 0.0).sum(axis=1)[keep] / lengths[keep]).mean()


#: wrong denominators and weights of a masked mean over ``devices`` blocks of sequences (the blocks' own mistake only
#: where the sequences split into ``devices`` equal blocks: any (S, T) is allowed)
MASKED_MISTAKES = (
    mistake("it is the plain mean of the local means (pmean of local means): devices with few valid tokens weigh as "
            "much as devices with many", lambda losses, mask, *, devices, **_: guarded_means(
                *block_partials(losses, mask, devices)).mean() if len(losses) % devices == 0 else None),
    mistake("it divides the total by the number of devices ({devices}), not by the number of valid tokens",
            lambda losses, mask, *, devices, **_: _total(losses, mask) / devices),
    mistake("it divides the total by the number of sequences, not by the number of valid tokens",
            lambda losses, mask, **_: _total(losses, mask) / len(losses)),
    mistake("it averages per-sequence means: sequences with few valid tokens weigh as much as long ones",
            _sequence_means),
    mistake("it averages every position: padding tokens were counted",
            lambda losses, mask, **_: losses.astype(np.float64).mean()),
    mistake("it divides by every position: padding tokens were counted",
            lambda losses, mask, **_: _total(losses, mask) / mask.size),
    mistake(NONZERO, _nonzero_mean))
#: the global masked mean of (losses, mask), with the mistakes named on them (``devices``: the notebook's count)
MASKED_MEAN = Reference(masked_mean, MASKED_MISTAKES)


def counts_equal(e: Evidence, key: str, reference: Reference, case: tuple) -> None:
    """Counts may be recorded as integers or floats; they must be the exact counts."""
    expected, mistakes = reference.on(*case)
    what = e.name(key)
    actual = e.array(key, shape=expected.shape, float_dtype=False, what=what)
    e.require(actual.dtype.kind in "iuf", f"{what}: expected numbers, got dtype {actual.dtype}")
    if not np.array_equal(actual.astype(np.float64), expected):
        said = {m.says for m in mistakes if np.array_equal(actual.astype(np.float64), m.value)}
        hint = next(iter(said)) if len(said) == 1 else None  # two mistakes that agree here: neither is claimed
        e.require(False, f"{what} does not match the host NumPy reference" + (f": {hint}" if hint else ""))


def local_means_close(e: Evidence, key: str, sums, counts) -> None:
    """Local means of non-empty shards match; an empty shard's mean only has to be finite."""
    what = e.name(key)
    raw = e.get(key, what=what)
    e.require(raw.kind not in ("array", "jax_array") or np.all(np.isfinite(raw.value.astype(np.float64))),
              f"{what}: a local mean is NaN or infinite: a shard without valid tokens has count 0, so its "
              "mean must be guarded (0.0), never sum / 0")
    actual = e.array(key, shape=np.shape(sums), what=what)
    nonempty = np.asarray(counts) > 0
    expected = np.asarray(sums)[nonempty] / np.asarray(counts)[nonempty]
    e.require(np.allclose(actual[nonempty].astype(np.float64), expected, rtol=1e-5, atol=1e-6),
              f"{what} does not match the host NumPy reference")


def _global_mean(shards):
    return np.concatenate(shards).mean()


def _mean_of_local_means(shards):
    return np.mean([s.mean() for s in shards])


def _divided_by_four(what: str, total):
    """The sum divided by the lesson's 4 (a hard-coded shard count), on any other number of shards."""
    return mistake(f"it divides by 4 ({FOUR}), not by the {what}",
                   lambda shards: total(shards) / 4 if len(shards) != 4 else None)


LOCAL_MEANS_NOT_GLOBAL = mistake("this is the mean of local means: the global mean weighs every example once",
                                 _mean_of_local_means)
GLOBAL_NOT_LOCAL_MEANS = mistake("this is the global mean: the mean of local means weighs every shard once",
                                 _global_mean)
GLOBAL_MEAN = Reference(_global_mean, (
    LOCAL_MEANS_NOT_GLOBAL, _divided_by_four("number of examples", lambda shards: np.concatenate(shards).sum())))
MEAN_OF_LOCAL_MEANS = Reference(_mean_of_local_means, (
    _divided_by_four("number of shards", lambda shards: sum(s.mean() for s in shards)), GLOBAL_NOT_LOCAL_MEANS))


@rubric.test("test-two-averages")
def judge_two_averages(e: Evidence):
    e.close(keys.EXAMPLE_GLOBAL, 2.0, mistakes=LOCAL_MEANS_NOT_GLOBAL(EXAMPLE))
    e.close(keys.EXAMPLE_LOCAL, 2.5, mistakes=GLOBAL_NOT_LOCAL_MEANS(EXAMPLE))
    for count in cases.shard_counts(e.num_devices):
        shards = cases.ragged(count)
        e.check(keys.HIDDEN_GLOBAL(count=count), GLOBAL_MEAN, (shards,))
        e.check(keys.HIDDEN_LOCAL(count=count), MEAN_OF_LOCAL_MEANS, (shards,))


LOCAL_GRADIENTS = Reference(block_gradients, (
    mistake("each block's gradient is divided by the global count N, not by its own count: a local mean gradient "
            "divides by the rows its block holds", lambda x, y, w, sizes: block_gradients(x, y, w, sizes,
                                                                                          divide_by=len(y))),
    mistake("the blocks ignore sizes: block i must hold the next sizes[i] rows",
            lambda x, y, w, sizes: block_gradients(x, y, w, [len(y) // len(sizes)] * len(sizes))
            if len(y) % len(sizes) == 0 else None)))


@rubric.test("test-local-gradients")
def judge_local_gradients(e: Evidence):
    x, y = data.lesson_batch()
    w = np.zeros(2)

    e.check(keys.LESSON_LOCALS, LOCAL_GRADIENTS, (x, y, w, [2, 2, 2, 2]))
    e.close(keys.LESSON_LOCALS, LESSON_LOCALS_2222)
    e.check(keys.LESSON_LOCALS_3_5, LOCAL_GRADIENTS, (x, y, w, [3, 5]))
    for count in cases.shard_counts(e.num_devices):
        e.check(keys.HIDDEN_LOCALS(count=count), LOCAL_GRADIENTS, cases.local_gradient_batch(count), rtol=1e-5,
                atol=1e-6)


EQUAL = Reference(lambda locals_: locals_.sum(axis=0) / len(locals_), (factors(lambda locals_: np.mean(locals_, axis=0),
    lambda locals_: {
        float(len(locals_)): f"the {len(locals_)} local means were summed: with p shards that is p times the global "
                             "gradient",
        len(locals_) / 4: f"it divides the sum of {len(locals_)} local means by 4 ({FOUR}), not by the number of "
                          "shards"}),))


def _wrong_axis(k: int, d: int) -> dict:
    return {(k,): "it averages over the wrong axis: combine the shards (axis 0) and keep the "
                  f"{d} gradient components"}


@rubric.test("test-equal-shards")
def judge_equal_shards(e: Evidence):
    e.close(keys.LESSON_EQUAL, LESSON_GRADIENT, mistakes=EQUAL.named(np.array(LESSON_LOCALS_2222)),
            shape_mistakes=_wrong_axis(4, 2))
    for count in cases.shard_counts(e.num_devices):
        e.check(keys.HIDDEN_EQUAL(count=count), EQUAL, (cases.equal_locals(count),),
                shape_mistakes=_wrong_axis(count, 3))


def _weighted(locals_, sizes):
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.tensordot(sizes, locals_, axes=1) / sizes.sum()


def _weighted_sum(locals_, sizes):
    return np.tensordot(np.asarray(sizes, dtype=np.float64), np.asarray(locals_, dtype=np.float64), axes=1)


WEIGHTED = Reference(_weighted, (
    mistake("it is the plain mean of the local means: weigh each by its count",
            lambda locals_, sizes: np.asarray(locals_, dtype=np.float64).mean(axis=0)),
    mistake("it divides by the number of shards, not by the total count",
            lambda locals_, sizes: _weighted_sum(locals_, sizes) / len(sizes)),
    mistake("integer (floor) division: // drops the fraction of the weighted mean; divide with /",
            lambda locals_, sizes: np.floor(_weighted_sum(locals_, sizes) / np.asarray(sizes, dtype=np.float64).sum())),
    mistake(f"it divides by 4 ({FOUR}), not by the total count",
            lambda locals_, sizes: _weighted_sum(locals_, sizes) / 4 if len(sizes) != 4 else None)))
NUMBER_SHAPE = "the docstring promises a single number for (k,) local means: the code handles only (k, d) input"


@rubric.test("test-unequal-shards")
def judge_unequal_shards(e: Evidence):
    e.close(keys.LESSON_WEIGHTED, LESSON_GRADIENT, mistakes=WEIGHTED.named(LESSON_LOCALS_35, [3, 5]))
    e.close(keys.LESSON_WEIGHTED_NUMBER, 2.0, mistakes=WEIGHTED.named([1.0, 4.0], [2, 1]),
            shape_mistakes={(2,): NUMBER_SHAPE, (2, 2): NUMBER_SHAPE})
    for count in cases.shard_counts(e.num_devices):
        locals_ = cases.unequal_locals(count)
        sizes = np.arange(1, count + 1)
        e.check(keys.HIDDEN_WEIGHTED(count=count), WEIGHTED, (locals_, sizes))
        e.check(keys.HIDDEN_WEIGHTED_NUMBER(count=count), WEIGHTED, (locals_[:, 1], sizes),
                shape_mistakes={(count,): NUMBER_SHAPE, (count, count): NUMBER_SHAPE})
        if count > 1:
            e.check(keys.HIDDEN_WEIGHTED_EMPTY(count=count), WEIGHTED, (locals_, np.arange(count)))


def judge_drawn(e: Evidence, judged: list, check) -> None:
    """``check(key, case)`` on each (key, case, drawn); a drawn case may not tell two mistakes apart, another drawn
    case may, and names it then: a drawn case's unexplained failure is said after them all (a fixed case's, which
    Validate judges, at once)."""
    unexplained = None
    for key, case, drawn in judged:
        try:
            check(key, case)
        except Mismatch as failure:
            if failure.named or not drawn:
                raise
            unexplained = unexplained or failure
    if unexplained:
        raise unexplained


@rubric.test("test-masked-mean")
def judge_masked_mean(e: Evidence):
    p = e.num_devices
    judged = [(keys.LESSON_MASKED_MEAN, data.masked_tokens(seed=0, num_shards=p), False)]
    judged += [(keys.MASKED_MEAN_OF(case=prefix, batch=keys.tokens_words(*tokens)), tokens, True)
               for prefix, tokens in cases.drawn_masked_tokens(e.draw)]  # over masked_token_mean's contract
    judge_drawn(e, judged, lambda key, tokens: e.check(key, MASKED_MEAN, tokens, devices=p))


PADDING_COUNTED = "padding positions were counted: count only the positions where mask is True"
PADDING_SUMMED = mistake("padding losses were summed too: add only the valid tokens' losses",
                         lambda losses, mask, shards: losses.astype(np.float64).reshape(shards, -1).sum(axis=1))
COUNTED_PADDING = mistake(PADDING_COUNTED,
                          lambda losses, mask, shards: np.full(shards, mask.size // shards, dtype=np.float64))
SUMS = Reference(lambda losses, mask, shards: block_partials(losses, mask, shards)[0], (PADDING_SUMMED,))
COUNTS = Reference(lambda losses, mask, shards: block_partials(losses, mask, shards)[1], (
    COUNTED_PADDING, mistake("sequences were counted, not valid tokens",
                             lambda losses, mask, shards: np.full(shards, len(mask) // shards, dtype=np.float64))))


@rubric.test("test-shard-statistics")
def judge_shard_statistics(e: Evidence):
    p = e.num_devices
    judged = [((keys.LESSON_SUMS, keys.LESSON_COUNTS, keys.LESSON_MEANS), data.masked_tokens(seed=0, num_shards=p), p)]
    judged += [((keys.HIDDEN_SUMS(count=count), keys.HIDDEN_COUNTS(count=count), keys.HIDDEN_MEANS(count=count)),
                cases.statistics_tokens(count, p), count) for count in cases.statistics_counts(p)]
    for (sums_key, counts_key, means_key), (losses, mask), shards in judged:
        e.check(sums_key, SUMS, (losses, mask, shards))
        counts_equal(e, counts_key, COUNTS, (losses, mask, shards))
        local_means_close(e, means_key, *block_partials(losses, mask, shards))


COMBINED = Reference(lambda sums, counts: sums.sum() / counts.sum(), (
    mistake("it divides the total by the number of shards ({k}), not by the total count",
            lambda sums, counts: (np.sum(sums, dtype=np.float64) / len(sums), {"k": len(sums)})),
    mistake("it is the plain mean of the local means", lambda sums, counts: guarded_means(
        np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)).mean()),
    mistake(f"it divides the total by 4 ({FOUR}), not by the total count",
            lambda sums, counts: np.sum(sums, dtype=np.float64) / 4 if len(sums) != 4 else None)))


@rubric.test("test-combine")
def judge_combine(e: Evidence):
    e.close(keys.LESSON_COMBINED, 18.5 / 10, mistakes=COMBINED.named([2.0, 0.0, 12.0, 4.5], [1, 0, 6, 3]))
    for prefix, (sums, counts) in cases.drawn_partials(e.draw):  # over combine_partials' contract
        e.check(keys.COMBINED_OF(case=prefix, partials=keys.partials_words(sums, counts)), COMBINED, (sums, counts))


DEVICE_SUMS = Reference(SUMS.compute, (PADDING_SUMMED, mistake(
    "these are local means, not local sums: divide once, at the end",
    lambda losses, mask, shards: guarded_means(*block_partials(losses, mask, shards)))))
DEVICE_COUNTS = Reference(COUNTS.compute, (COUNTED_PADDING, mistake(
    NONZERO.replace("it counts", "these count"), lambda losses, mask, shards: np.count_nonzero(
        np.where(mask, losses, 0.0).reshape(shards, -1), axis=1).astype(np.float64))))


@rubric.test("test-device-partials")
def judge_device_partials(e: Evidence):
    p = e.num_devices
    for (sums_key, counts_key), (losses, mask) in [
            ((keys.DEVICE_SUMS, keys.DEVICE_COUNTS), data.masked_tokens(seed=0, num_shards=p)),
            ((keys.HIDDEN_DEVICE_SUMS, keys.HIDDEN_DEVICE_COUNTS), cases.device_partials_tokens(p))]:
        for key in (sums_key, counts_key):
            e.array(key, jax=True, float_dtype=False)
            e.shard_shapes(key, (1,), devices=p)
        e.check(sums_key, DEVICE_SUMS, (losses, mask, p), rtol=1e-5, atol=1e-5)
        counts_equal(e, counts_key, DEVICE_COUNTS, (losses, mask, p))


def finite_mesh_result(e: Evidence, key: str, devices: int, nan: str) -> str:
    """A value a test recorded from a program on a mesh of ``devices``: there (a smaller mesh's result missing means
    the program ignored the mesh it was given) and not NaN (``nan`` says why it would be); returns the value's name
    in the learner's words."""
    what = e.name(key)
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
    return [Program(keys.MASKED_MEAN_PROGRAM, p, (Input(losses.shape, ("data", None)),
                                                   Input(mask.shape, ("data", None), "bool")),
                    expect=PSUM_IN_ONE_REGION)]


def _mixed_up(losses, mask, *, devices: int) -> dict[float, str]:
    """One of the two partials reduced once less or once more than the other (the same values), and the program
    that assumes four devices; where a factor is also the four-device one (a mesh of 2), that diagnosis stays the
    only one."""
    mixed_up = {
        1 / devices: f"{devices} times too small: the counts were reduced {devices} times more than the sums: "
                     "either the local sums were averaged (pmean) but the counts summed (psum), or the counts "
                     "were reduced twice (a psum of an already summed count): psum each once, then divide once",
        float(devices): f"{devices} times too large: the sums were reduced {devices} times more than the counts: "
                        "either the local counts were averaged (pmean) but the sums summed (psum), or the sums "
                        "were reduced twice (a psum of an already summed sum): psum each once, then divide once"}
    return {f: says for f, says in mixed_up.items() if not np.isclose(f, devices / 4)}


# (not judged against the learner's own per-device counts: a relief that did so let counts already charged for
# another reason excuse a program's own miscount, 14 against 11 points; tests/attacks/local_mean_diagnosis)
SHARDED_MASKED_MEAN = Reference(masked_mean, MASKED_MISTAKES + (
    factors(masked_mean, lambda losses, mask, *, devices: {
        devices / 4: f"scaled by {devices}/4 on a mesh of {devices} device(s): the program assumes four devices"}),
    factors(masked_mean, _mixed_up)))


def _sharded_case(e: Evidence, key: str, tokens, devices: int) -> None:
    """One case of test-shard-map: the recorded sharded masked mean against the NumPy reference, with its mistakes."""
    nan = ("the result is NaN: a local count of zero (the empty device) was divided by; psum the sums and the "
           "counts, then divide once")
    finite_mesh_result(e, key, devices, nan)
    e.array(key, shape=(), jax=True)
    actual = e.check(key, SHARDED_MASKED_MEAN, tokens, rtol=1e-5, devices=devices)
    e.shard_shapes(key, (), devices=devices)
    e.replicas_close(key, actual, rtol=1e-6, atol=1e-7, against="the result's own value")


@rubric.test("test-shard-map")
def judge_shard_map(e: Evidence):
    p = e.num_devices
    judged = [((keys.SHARDED_MEAN, p), data.masked_tokens(seed=0, num_shards=p), False)]
    judged += [((keys.SHARDED_MEAN_OF(case=prefix, batch=keys.CASE_WORDS[prefix]), p), tokens, False)
               for prefix, tokens in cases.shard_map_tokens(p)]
    judged += [((keys.SHARDED_MEAN_OF(case=prefix, batch=keys.tokens_words(*tokens, size)), size), tokens, True)
               for prefix, size, tokens in cases.drawn_shard_map_tokens(p, e.draw)]  # over the contract, this draw
    judge_drawn(e, judged, lambda key_size, tokens: _sharded_case(e, key_size[0], tokens, key_size[1]))
    e.require(e.number(keys.DEVICE_COUNT) == p, f"the notebook should use all {p} devices")
    e.require(e.outcome(keys.HOST_ROUND_TRIP, HostCopy) is HostCopy.NONE, HOST_ROUND_TRIP)
    # The program itself, exported by the kernel and run by the grader on tokens it drew.
    losses, mask = e.program_expected(keys.MASKED_MEAN_PROGRAM).inputs  # PSUM_IN_ONE_REGION
    e.program_check(keys.MASKED_MEAN_PROGRAM, 0, MASKED_MEAN, (losses, mask), rtol=1e-5,
                    devices=p)  # (the grader's draws have no loss of exactly 0)
