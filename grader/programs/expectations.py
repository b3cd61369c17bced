"""The standard words for a program that does not look as its ``Expect`` says, and the order they are judged in.

Each check is named; a rubric may give a check the lesson's own words (``Expect.says``). "{what}" stands for the
program's name in the learner's words; "{other}" for a collective the program should not have; "{wanted}" for
the one it should communicate with, as StableHLO names it (stablehlo.all_reduce); "{count}"/"{expected}" for
output counts (and collective counts); "{index}" for an output's number; "{sharding}" for how an output is split;
"{kinds}" for the collectives found, as "2 all_gather, 1 all_reduce".
"""
from __future__ import annotations

from grader.programs import Expect

STANDARD: dict[str, str] = {
    "output_count": "{what}: returns {count} value(s), expected {expected}",
    "output_shards": "{what}: output {index}'s shards disagree with its value",
    "output_replicated": "{what}: output {index} should be replicated on every device, it is split as {sharding}",
    "output_split": "{what}: output {index} should stay split over the devices, it is replicated",
    "no_region": "{what}: it has no shard_map region: write the per-device program with jax.shard_map, manual over "
                 "the mesh axis the inputs are split on",
    "not_one_region": "{what}: the result is not computed inside one jax.shard_map region: outside the per-device "
                      "program there should be nothing but the placement of inputs and results (a computation beside "
                      "or around the shard_map is partitioned by the compiler, which adds collectives of its own, a "
                      "shard_map whose in_specs differ from the inputs' placement makes the compiler move the data "
                      "first, and a sharding constraint or out_shardings that re-places what the shard_map returns "
                      "makes it move the result)",
    "missing": "{what}: the program has no {wanted}",
    "other": "{what}: the program also communicates with {other}: use {wanted} only",
    "gathers": "{what}: its compiled program gathers a split input onto every device (an all-gather): keep the input "
               "split as the shardings place it; each device works on its own part and only results cross devices",
    "in_loop": "{what}: the program communicates inside its loop over micro-batches, once per micro-batch: each "
               "device should add up its own micro-batches first and the devices reduce once, after the loop",
    "reduces_often": "{what}: its collectives carry more bytes than the result and its count, or there are more of "
                     "them than one reduction needs: the devices reduce several times (once per micro-batch?) where "
                     "one reduction, after the accumulation, is enough",
    "collectives": "{what}: the program writes {count} collective operation(s) ({kinds}), at most {expected} expected",
    "compiled_collectives": "{what}: its compiled program communicates between devices ({kinds}), at most "
                            "{expected} collective(s) expected: keep each input where its sharding places it",
    "moves_data": "{what}: its collective carries the batch itself, not the local results: each device must reduce "
                  "its own rows to its local contribution first, and the collective combines those (a psum of "
                  "buffers the size of the whole batch, each device filling in its rows, is an all-gather of the "
                  "data written as an all-reduce)",
}


def words(expect: Expect, check: str, what: str, **fields) -> str:
    """The message of a failed ``check``: the lesson's words where ``expect.says`` has them, else the standard."""
    text = dict(expect.says).get(check, STANDARD[check])
    for name, value in {"what": what, **fields}.items():
        text = text.replace("{" + name + "}", str(value))
    return text
