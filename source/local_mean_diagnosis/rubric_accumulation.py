"""References for local_mean_diagnosis's gradient accumulation tests (the block partials and the accumulated
gradient), computed by the grader in NumPy: sums and counts over every micro-batch and device, divided once."""
from types import SimpleNamespace

import numpy as np

from coursekit import data
from grader.rubric import Evidence, Expect, Input, Mismatch, Program, Reference, mistake

from . import rubric_cases as cases
from . import rubric_keys as keys
from .rubric_means import PADDING_COUNTED, counts_equal, finite_mesh_result, rubric


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


def _parts(x, y, mask, w, devices: int) -> SimpleNamespace:
    """What the accumulation's mistakes are computed from, on a batch split over ``devices``."""
    numerators, counts = block_numerators(x, y, mask, w, devices)
    per_micro = numerators.sum(axis=1), counts.sum(axis=1)  # each micro-batch over every device
    residual = np.where(mask, x.astype(np.float64) @ np.asarray(w, dtype=np.float64) - y, 0.0)
    return SimpleNamespace(
        counts=counts, total=numerators.sum(axis=(0, 1)), micro=x.shape[0], nonempty=per_micro[1] > 0,
        micro_means=np.where(per_micro[1][:, None] > 0, per_micro[0] / np.maximum(per_micro[1], 1)[:, None], 0.0),
        block_means=np.where(counts[..., None] > 0, numerators / np.maximum(counts, 1)[..., None], 0.0),
        empty_devices=int((counts.sum(axis=0) == 0).sum()), nonzero=int(np.count_nonzero(residual)))


def _on(wrong):
    """A mistake computed from the batch's ``_parts``: ``wrong(parts, x, y, mask, w, devices)``."""
    return lambda x, y, mask, w, *, devices, **_: wrong(_parts(x, y, mask, w, devices), x, y, mask, w, devices)


def _first_three(a, x, y, mask, w, devices):
    """A loop of the lesson's fixed length: the first three micro-batches only."""
    if a.micro <= 3:
        return None
    first = block_numerators(x[:3], y[:3], mask[:3], w, devices)
    return (first[0].sum(axis=(0, 1)) / first[1].sum(), {"m": a.micro}) if first[1].sum() else None


SHIPPED = ("it is the mean of micro-batch means, averaged over the devices (the accumulation as it shipped): each "
           "micro-batch's gradient was divided by its own count of valid tokens; add the gradient sums and the "
           "counts over every micro-batch and device, and divide once")
MEAN_OF_MEANS = ("it is the mean of micro-batch means: each micro-batch's gradient was divided by its own count of "
                 "valid tokens, so a short micro-batch's tokens weigh more; add the sums and the counts, divide once")
NONZERO_ERRORS = ("it counts the tokens whose error is non-zero, not the valid tokens: a target predicted exactly (an "
                  "error of 0) is still a valid token; count the positions where mask is True")
ACCUMULATED = Reference(accumulated, (
    mistake(SHIPPED, _on(lambda a, *_: a.block_means.mean(axis=(0, 1)))),
    mistake(MEAN_OF_MEANS, _on(lambda a, *_: a.micro_means.mean(axis=0))),
    mistake(MEAN_OF_MEANS + " (leaving an empty micro-batch out does not change that: the others still weigh the same "
            "whatever their counts)", _on(lambda a, *_: a.micro_means[a.nonempty].mean(axis=0)
                                          if a.nonempty.any() else None)),
    mistake("it divides the summed gradient by the number of micro-batches ({m}), not by the number of valid tokens "
            "of the whole batch", _on(lambda a, *_: (a.total / a.micro, {"m": a.micro}))),
    mistake("it divides by every token position: padding positions were counted; count only the positions where mask "
            "is True", _on(lambda a, x, y, mask, *_: a.total / mask.size)),
    mistake("it divides by the number of sequences, not by the number of valid tokens",
            _on(lambda a, x, y, mask, *_: a.total / (a.micro * mask.shape[1]))),
    mistake("each block was divided twice: once by its own count (microbatch_partials returned the gradient of its "
            "mean loss, not of its sum) and again by the global count",
            _on(lambda a, *_: a.block_means.sum(axis=(0, 1)) / a.counts.sum())),
    mistake("{devices} times too large: the gradient was summed over the devices twice: jax.grad with respect to the "
            "replicated w already psums it over the devices (the transpose of using one w on every device), and psum "
            "added the devices again; differentiate with respect to w_local = lax.pcast(w, \"data\", to=\"varying\")",
            _on(lambda a, x, y, mask, w, devices: devices * (a.total / a.counts.sum()) if devices > 1 else None)),
    # a device's count guarded against zero before the psum: each device without a valid token counts 1
    mistake("its denominator is the count plus {n}, one for each device without a valid token in the whole step: a "
            "device's count was guarded against zero (jnp.maximum(count, 1)) before the psum; psum the counts as they "
            "are (a batch always holds a valid token, so the global count is never zero) and divide once",
            _on(lambda a, *_: (a.total / (a.counts.sum() + a.empty_devices), {"n": a.empty_devices})
                if a.empty_devices else None)),
    mistake("it is the gradient of the first 3 micro-batches of {m}: the loop runs the lesson's 3 micro-batches, not "
            "the batch's; loop over every micro-batch of x (lax.scan over (x, y, mask) does)", _on(_first_three)),
    mistake(NONZERO_ERRORS, _on(lambda a, *_: a.total / a.nonzero if a.nonzero and a.nonzero != a.counts.sum()
                                else None))))


def _block_sum(x, y, mask, w):
    """The gradient sum and the count of one block, as block_numerators gives them for a mesh of one."""
    numerator, count = (v[0, 0] for v in block_numerators(x[None], y[None], mask[None], w, 1))
    return numerator, count


PARTIAL_GRADIENT = Reference(lambda x, y, mask, w: _block_sum(x, y, mask, w)[0], (mistake(
    "this is the gradient of the block's mean loss: return the gradient of the SUM and the count; the one division "
    "comes after the psum", lambda x, y, mask, w: (lambda n, c: n / c if c else None)(*_block_sum(x, y, mask, w))),))


def _nonzero_errors(x, y, mask, w):
    residual = np.where(mask, x.astype(np.float64) @ np.asarray(w, dtype=np.float64) - y, 0.0)
    return np.float64(np.count_nonzero(residual)) if np.count_nonzero(residual) != mask.sum() else None


BLOCK_COUNT = Reference(lambda x, y, mask, w: np.asarray(mask.sum(), dtype=np.float64), (
    mistake(PADDING_COUNTED, lambda x, y, mask, w: np.float64(mask.size)),
    mistake("sequences were counted, not valid tokens", lambda x, y, mask, w: np.float64(len(mask))),
    mistake(NONZERO_ERRORS, _nonzero_errors)))


@rubric.test("test-microbatch-partials")
def judge_microbatch_partials(e: Evidence):
    x, y, mask, w = data.accumulation_batch(seed=0, num_shards=e.num_devices, empty=(1,))
    block = slice(0, x.shape[1] // e.num_devices)
    judged = [("partials", (x[0, block], y[0, block], mask[0, block], w))] + cases.partials_blocks()
    judged += [(prefix, block_) for prefix, _, block_ in cases.drawn_partials_blocks(e.draw)]  # over the contract
    for prefix, block_ in judged:
        words = keys.CASE_WORDS.get(prefix) or keys.block_words(*block_)
        e.check(keys.GRADIENT_SUM_OF(case=prefix, block=words), PARTIAL_GRADIENT, block_, rtol=1e-5, atol=1e-5)
        counts_equal(e, keys.COUNT_OF(case=prefix, block=words), BLOCK_COUNT, block_)


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
    return [Program(keys.ACCUMULATION_PROGRAM, p, (Input(x.shape, (None, "data", None, None)),
                                                    Input(y.shape, (None, "data", None)),
                                                    Input(mask.shape, (None, "data", None), "bool"),
                                                    Input(w.shape, ())), expect=ACCUMULATE_ONCE)]


@rubric.test("test-accumulation")
def judge_accumulation(e: Evidence):
    p, program = e.num_devices, keys.ACCUMULATION_PROGRAM
    judged = [(keys.ACCUMULATED, data.accumulation_batch(seed=0, num_shards=p, empty=(1,)), p, False)]
    judged += [(keys.ACCUMULATED_OF(case=prefix, batch=keys.CASE_WORDS[prefix]), batch, p, False)
               for prefix, batch in cases.accumulation_batches(p)]
    _accumulated_values(e, judged)
    try:  # the program's structure before the drawn cases: a loop of psums is told so whatever the batch
        run = e.program_expected(program)  # ACCUMULATE_ONCE
    except Mismatch as failure:  # reduces more than once: say how, from what the run shows
        if str(failure) != REDUCES_OFTEN.replace("{what}", program.words):
            raise
        raise Mismatch(reduces_often(e.program(program), program.words)) from None
    _accumulated_values(e, [(keys.ACCUMULATED_OF(case=prefix, batch=keys.batch_words(batch[0], batch[2], size)),
                             batch, size, True)  # this learner's draw, over the docstring's contract
                            for prefix, size, batch in cases.drawn_accumulation_batches(p, e.draw)])
    e.program_check(program, 0, ACCUMULATED, tuple(run.inputs), rtol=1e-4, atol=1e-5, devices=p)


def _accumulated_values(e: Evidence, judged: list) -> None:
    """Each (key, batch, mesh size, drawn) of test-accumulation against the NumPy gradient."""
    for key, batch, devices, drawn in judged:
        d, what = batch[3].size, e.name(key)
        nan = ("the gradient is NaN: a micro-batch or a device without valid tokens was divided by its own count of "
               "zero; add sums and counts, divide once at the end")
        if not drawn:
            finite_mesh_result(e, key, devices, nan)
        else:  # a drawn case the cell did not reach says why (the cell that raised), never a guessed cause
            raw = e.get(key)
            e.require(raw.kind not in ("array", "jax_array") or np.all(np.isfinite(raw.value.astype(np.float64))),
                      f"{what}: {nan}")
        shapes = {(2,): "it has 2 values, the lesson's number of features, not the batch's: size the carry from w "
                        "(jnp.zeros_like(w_local)), never from the lesson's data"} if d != 2 else None
        e.array(key, shape=(d,), jax=True, shape_mistakes=shapes)
        actual = e.check(key, ACCUMULATED, batch, rtol=1e-4, atol=1e-5, devices=devices)  # off by how much
        e.shard_shapes(key, (d,), devices=devices)
        e.replicas_close(key, actual, rtol=1e-6, atol=1e-7, against="the result's own value")
