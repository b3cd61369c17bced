"""The keys local_mean_diagnosis's test cells record under, each with the words a learner knows for its value, and
the words of the drawn cases.

Declared beside the hidden cases (``rubric_cases.py``), not in that module: the hidden parts handed out with the
lesson record under these keys' text, and ``rubric_cases.py``'s own text is part of what draws the inputs of the
programs the grader runs, so it stays as it was released. A new lesson declares its keys in ``rubric_cases.py`` and
its hidden parts import them.
"""
import numpy as np

from coursekit.record import Key

EXAMPLE_GLOBAL = Key("example.global_mean", "the global mean of the two-shard example")
EXAMPLE_LOCAL = Key("example.mean_of_local_means", "the mean of local means of the two-shard example")
HIDDEN_GLOBAL = Key("hidden.{count}.global_mean", "the global mean of {count} unseen shard(s)")
HIDDEN_LOCAL = Key("hidden.{count}.mean_of_local_means", "the mean of local means of {count} unseen shard(s)")
LESSON_LOCALS = Key("lesson.local_gradients", "the four local mean gradients of the lesson batch")
LESSON_LOCALS_3_5 = Key("lesson.local_gradients_3_5", "the local mean gradients of the 3 + 5 split")
HIDDEN_LOCALS = Key("hidden.{count}.local_gradients",
                    "local mean gradients of {count} unequal block(s) of an unseen batch")
LESSON_EQUAL = Key("lesson.equal", "the global gradient from four equal shards")
HIDDEN_EQUAL = Key("hidden.{count}.equal", "the combination of {count} unseen equal-shard means")
LESSON_WEIGHTED = Key("lesson.weighted", "the global gradient from the 3 + 5 split")
LESSON_WEIGHTED_NUMBER = Key("lesson.weighted_number", "weighted_gradient of (k,) local means (the two-shard example)")
HIDDEN_WEIGHTED = Key("hidden.{count}.weighted", "the count-weighted combination of {count} unseen local means")
HIDDEN_WEIGHTED_NUMBER = Key("hidden.{count}.weighted_number",
                             "the count-weighted combination of {count} unseen (k,) local means")
HIDDEN_WEIGHTED_EMPTY = Key("hidden.{count}.weighted_with_empty",
                            "the count-weighted combination of {count} unseen local means with an empty shard")
LESSON_MASKED_MEAN = Key("lesson.masked_mean", "the global masked mean")
LESSON_SUMS = Key("lesson.sums", "the per-shard sums of the lesson batch")
LESSON_COUNTS = Key("lesson.counts", "the per-shard valid-token counts of the lesson batch")
LESSON_MEANS = Key("lesson.means", "the per-shard local means of the lesson batch")
HIDDEN_SUMS = Key("hidden.{count}.sums", "the per-shard sums of an unseen batch in {count} shard(s)")
HIDDEN_COUNTS = Key("hidden.{count}.counts", "the per-shard valid-token counts of an unseen batch in {count} shard(s)")
HIDDEN_MEANS = Key("hidden.{count}.means", "the per-shard local means of an unseen batch in {count} shard(s)")
LESSON_COMBINED = Key("lesson.combined", "the global mean from partial sums and counts")
DEVICE_SUMS = Key("device.sums", "the per-device sums of valid losses")
DEVICE_COUNTS = Key("device.counts", "the per-device counts of valid tokens")
HIDDEN_DEVICE_SUMS = Key("hidden.device.sums", "the per-device sums of valid losses of an unseen batch")
HIDDEN_DEVICE_COUNTS = Key("hidden.device.counts", "the per-device counts of valid tokens of an unseen batch")
SHARDED_MEAN = Key("device.masked_mean", "the sharded masked mean")
DEVICE_COUNT = Key("hidden.device_count", "the number of devices")
HOST_ROUND_TRIP = Key("hidden.host_round_trip", "the host transfers of your sharded masked mean")
MASKED_MEAN_PROGRAM = Key("program.masked_mean", "your sharded masked mean, run by the grader on tokens it drew")
ACCUMULATED = Key("accumulation.gradient", "the accumulated gradient of the lesson batch")
ACCUMULATION_PROGRAM = Key("program.accumulation", "your accumulated gradient, run by the grader on a batch it drew")
# the cases the hidden parts record under a prefix (``case``: the prefix the case function gives), in the learner's
# words: a fixed case's are CASE_WORDS[prefix], a drawn case's are computed from it (``tokens_words``, ...)
MASKED_MEAN_OF = Key("{case}.masked_mean", "the global masked mean of {batch}")
COMBINED_OF = Key("{case}.combined", "the global mean from {partials}")
SHARDED_MEAN_OF = Key("{case}.masked_mean", "the sharded masked mean of {batch}")
GRADIENT_SUM_OF = Key("{case}.gradient_sum", "the gradient sum of {block}")
COUNT_OF = Key("{case}.count", "the valid-token count of {block}")
ACCUMULATED_OF = Key("{case}.gradient", "the accumulated gradient of {batch}")
CASE_WORDS = {"partials": "one block of the lesson batch", "hidden.partials": "an unseen block",
              "hidden.partials.empty": "an unseen block that holds only padding",
              "hidden.device.full": "an unseen batch without an empty device",
              "hidden.accumulation.empty": "an unseen batch with an empty micro-batch",
              "hidden.accumulation": "an unseen batch"}


# -- drawn cases in the learner's words ---------------------------------------------------------------------------
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


def batch_words(x, mask, devices: int) -> str:
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


def block_words(x, y, mask, w) -> str:
    """A drawn block of one micro-batch in the learner's words: its shape, and what is special about it."""
    residual = np.where(mask, x.astype(np.float64) @ np.asarray(w, dtype=np.float64) - y, 0.0)
    special = ("; it holds only padding" if not mask.any() else
               "; a valid token's error is exactly 0" if mask.sum() - np.count_nonzero(residual) else "")
    return f"an unseen block of {x.shape[0]} sequence(s) of {x.shape[1]} token position(s), {x.shape[2]} feature(s)" \
        + special


def partials_words(sums, counts) -> str:
    """Drawn partial sums and counts in the learner's words: how many, and what is special about them."""
    special = [text for text, holds in [(f"{int((counts == 0).sum())} of them empty", bool((counts == 0).any())),
                                        ("a non-empty one whose sum is 0", bool(((sums == 0) & (counts > 0)).any())),
                                        ("counts as floats", counts.dtype.kind == "f")] if holds]
    return f"{len(sums)} unseen partial(s)" + (f" ({'; '.join(special)})" if special else "")
