"""Hidden cases drawn over a docstring's contract (issue 58, item 1): local_mean_diagnosis's accumulation, block
partials, masked mean, combination and sharded masked mean cases; sharded_step's ten steps and transfer; every
collectives case (local contributions, the three programs on a smaller mesh, momentum, reversal, payload, budget).

No kernel: the draws are NumPy, and the grader's side of the plumbing (``order.split``, ``order.rejoin``,
``order.drawn``) is plain notebook data. What is proven: each declared dimension takes more than one value across
learners (so nothing a learner can hard-code, three micro-batches, two features, a device that always holds a valid
token, holds on every draw); every draw includes the corners; a learner's draw is the same at every grading; the
batches drawn are what the contract says (shapes, empty parts, a token whose error is exactly 0, one valid token at
least); the kernel and the judge are handed the same draw number.
"""
from __future__ import annotations

import importlib.util
import sys

import nbformat
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.layout import Course
from grader.submission import order

COURSE = Course.default()
ASSIGNMENT = "local_mean_diagnosis"
learners = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20)


def _cases():
    spec = importlib.util.spec_from_file_location("lmd_rubric_cases", COURSE.source / ASSIGNMENT / "rubric_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


cases = _cases()


def _draw(student: str) -> int:
    return order.learner_draw(student, ASSIGNMENT)


def _blocks(mask, devices: int) -> np.ndarray:
    return mask.reshape(mask.shape[0], devices, -1).sum(axis=2)


@pytest.mark.parametrize("contract", [cases.ACCUMULATION, cases.PARTIALS, cases.MASKED, cases.COMBINE,
                                      cases.SHARD_MAP], ids=lambda c: c.name)
def test_every_declared_dimension_is_varied_across_learners(contract):
    seen = {dimension: set() for dimension in contract.dimensions}
    for n in range(60):
        for case in contract.draw(_draw(f"learner-{n}")):
            for dimension in contract.dimensions:
                seen[dimension].add(case[dimension])
    for dimension, allowed in contract.dimensions.items():
        assert seen[dimension] == set(allowed), f"{contract.name}.{dimension}: drew {sorted(seen[dimension], key=str)}"


@settings(max_examples=40, deadline=None)
@given(learners)
def test_a_learners_draw_is_the_same_at_every_grading_and_holds_the_corners(student):
    draw = _draw(student)
    assert draw == order.learner_draw(student, ASSIGNMENT)
    first = cases.drawn_accumulation_batches(4, draw)
    again = cases.drawn_accumulation_batches(4, draw)
    assert [name for name, _, _ in first] == [name for name, _, _ in again]
    for (_, size, batch), (_, size_again, batch_again) in zip(first, again):
        assert size == size_again and all(np.array_equal(a, b) for a, b in zip(batch, batch_again))
    corner = cases.ACCUMULATION.draw(draw)[0]
    assert corner["micro_batches"] > 3 and corner["features"] != 2 and corner["device_empty_in_step"]
    _, size, (x, y, mask, w) = first[0]
    assert size == 4 and x.shape[0] > 3 and w.size != 2
    assert (_blocks(mask, size).sum(axis=0) == 0).any(), "the corner's device without a valid token in the step"
    assert any(size < 4 for _, size, _ in first[1:]), "a smaller mesh in every draw"


@settings(max_examples=60, deadline=None)
@given(learners, st.sampled_from([2, 4, 8]))
def test_each_drawn_batch_is_what_the_contract_says(student, devices):
    for (name, size, (x, y, mask, w)), case in zip(cases.drawn_accumulation_batches(devices, _draw(student)),
                                                  cases.ACCUMULATION.draw(_draw(student))):
        m, s, t, d = case["micro_batches"], case["seqs"], case["tokens"], case["features"]
        assert size == cases.mesh_size(case["mesh"], devices)
        assert x.shape == (m, size * s, t, d) and y.shape == mask.shape == (m, size * s, t) and w.shape == (d,)
        assert mask.dtype == bool and x.dtype == y.dtype == w.dtype == np.float32
        assert mask.any(), f"{name}: a batch holds a valid token"
        blocks = _blocks(mask, size)
        if case["device_empty_in_step"] and size > 1:
            assert (blocks.sum(axis=0) == 0).any(), name
        if case["empty_micro_batch"] and m > 1:
            assert not mask[0].any(), name
        if case["zero_loss"]:
            residual = np.where(mask, x.astype(np.float64) @ w.astype(np.float64) - y, 1.0)
            assert (residual == 0).any(), f"{name}: a valid token whose error is exactly 0"


def test_the_kernel_and_the_judge_are_handed_the_same_draw():
    source = COURSE.read_source(ASSIGNMENT)
    hidden = COURSE.hidden_cases(ASSIGNMENT)
    assert order.draws_per_learner(hidden)
    draw = _draw("pat-zq81")
    assert draw != _draw("quinn-xv27") and draw != order.learner_draw("pat-zq81", "sharded_step")
    split = order.split(source, hidden, draw=draw)
    loaders = [c.source for c in split.cells if order.cells.hidden_part_of(c)]
    assert loaders and all(f"{order.DRAW} = {draw}" in c for c in loaders)
    assert order.drawn(split) == draw
    joined = order.rejoin(split)
    assert order.drawn(joined) == draw and order.hidden_ran_last(joined)
    assert "pat-zq81" not in nbformat.writes(split), "the kernel is never told whose notebook it runs"
    # a cases module that does not draw per learner is handed no draw: its kernels' notebooks stay the same for all
    other = COURSE.hidden_cases("collectives")
    assert order.draws_per_learner(other), "every lesson's cases draw per learner"
    not_drawing = other.replace(f"\n{order.DRAW} = 0\n", "\n")
    assert not order.draws_per_learner(not_drawing)
    plain = order.split(COURSE.read_source("collectives"), not_drawing, draw=draw)
    assert order.drawn(plain) == 0 and f"{order.DRAW} =" not in nbformat.writes(plain)
    assert order.drawn(order.split(source, hidden)) == 0  # no draw given: the instructor's own (0)


def test_the_draw_follows_the_answers_not_the_learner():
    """Identical answers get identical cases (the same verdict for the same code, and one kernel run for both); other
    answers another draw; the instructor's cells, the same for everyone, decide nothing."""
    import nbformat

    def notebook(answer: str):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# lesson"),
                                               nbformat.v4.new_code_cell("import numpy as np"),
                                               nbformat.v4.new_code_cell(answer)])

    same = [order.learner_draw(order.answers_key(notebook("x = 1")), ASSIGNMENT) for _ in range(2)]
    other = order.learner_draw(order.answers_key(notebook("x = 2")), ASSIGNMENT)
    assert same[0] == same[1] != other


def _has_zero_loss(losses, mask) -> bool:
    return bool(((losses == 0) & mask).any())


@settings(max_examples=60, deadline=None)
@given(learners, st.sampled_from([2, 4, 8]))
def test_the_masked_mean_combine_and_shard_map_cases_are_what_their_contracts_say(student, devices):
    draw = _draw(student)
    masked = cases.drawn_masked_tokens(draw)
    for (name, (losses, mask)), case in zip(masked, cases.MASKED.draw(draw)):
        assert losses.shape == mask.shape == (case["seqs"], case["tokens"]) and mask.dtype == bool, name
        assert mask.any() and losses.dtype == np.float32 and (losses[mask] != 0).any(), f"{name}: a mean of 0"
        # a loss of 0 beside one that is not (a batch of one position holds one valid token: its loss is not 0)
        assert _has_zero_loss(losses, mask) == (case["zero_loss"] and mask.sum() > 1), name
        if case["empty_sequence"] and len(mask) > 1:
            assert (mask.sum(axis=1) == 0).any(), name
    # the corner: a shape other than the lesson's, sequences no device count of 2, 4 or 8 divides, an empty
    # sequence and a loss of 0 (a learner who splits by the devices, or counts non-zero losses, is seen)
    losses, mask = masked[0][1]
    assert len(mask) % 2 and mask.shape[1] != 6 and (mask.sum(axis=1) == 0).any() and _has_zero_loss(losses, mask)

    combined = cases.drawn_partials(draw)
    for (name, (sums, counts)), case in zip(combined, cases.COMBINE.draw(draw)):
        assert sums.shape == counts.shape and len(sums) >= case["shards"] and counts.sum() > 0, name
        assert counts.dtype.kind == ("f" if case["counts"] == "float" else "i"), name
        assert np.all(sums[counts == 0] == 0), f"{name}: an empty shard's sum is 0"
        assert int((counts == 0).sum()) == min(case["empty_shards"], case["shards"] - 1), name
        assert bool(((sums == 0) & (counts > 0)).any()) == case["zero_sum"], name
    assert len(combined[0][1][0]) > 4 and (combined[0][1][1] == 0).any() and len(combined[1][1][0]) == 1

    drawn = cases.drawn_shard_map_tokens(devices, draw)
    for (name, size, (losses, mask)), case in zip(drawn, cases.SHARD_MAP.draw(draw)):
        assert size == cases.mesh_size(case["mesh"], devices), name
        assert losses.shape == mask.shape == (size * case["seqs"], case["tokens"]) and mask.any(), name
        assert (losses[mask] != 0).any(), f"{name}: a mean of 0"
        assert _has_zero_loss(losses, mask) == (case["zero_loss"] and mask.sum() > 1), name
        if case["device_empty"] and size > 1:
            assert (_blocks(mask[None], size)[0] == 0).any(), f"{name}: a device without a valid token"
    assert drawn[0][1] == devices and (_blocks(drawn[0][2][1][None], devices)[0] == 0).any()
    assert drawn[1][1] < devices and drawn[2][1] < devices, "two smaller meshes in every draw"


def _sharded_step_cases():
    spec = importlib.util.spec_from_file_location("ss_rubric_cases", COURSE.source / "sharded_step" / "rubric_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def _every_dimension_varied(contract, assignment: str, learners: int) -> None:
    """Across ``learners`` learners' draws of ``assignment``, each declared dimension of ``contract`` takes every
    value it allows."""
    seen = {dimension: set() for dimension in contract.dimensions}
    for n in range(learners):
        for case in contract.draw(order.learner_draw(f"learner-{n}", assignment)):
            for dimension in contract.dimensions:
                seen[dimension].add(case[dimension])
    for dimension, allowed in contract.dimensions.items():
        assert seen[dimension] == set(allowed), f"{contract.name}.{dimension}: drew {sorted(seen[dimension], key=str)}"


step_cases = _sharded_step_cases()


@pytest.mark.parametrize("contract", [step_cases.TEN_STEPS, step_cases.TRANSFER], ids=lambda c: c.name)
def test_every_declared_dimension_of_the_sharded_step_is_varied_across_learners(contract):
    _every_dimension_varied(contract, "sharded_step", learners=80)


@settings(max_examples=60, deadline=None)
@given(learners, st.sampled_from([2, 4, 8]))
def test_the_sharded_step_cases_are_what_their_contracts_say_and_never_the_lessons(student, devices):
    draw = order.learner_draw(student, "sharded_step")
    x, y, w = step_cases.ten_steps_batch(devices, draw)
    case = step_cases.TEN_STEPS.draw(draw)[0]
    assert x.shape == (case["rows"] * devices, case["features"]) and y.shape == (len(x),) and w.shape == (x.shape[1],)
    assert x.shape[1] != 2, "the corner: features other than the lesson's 2"
    target, start, rate = step_cases.transfer_case(draw)
    assert len(target) == len(start) == 2 and 0 < rate < 0.1 and rate != 0.05
    assert target != [-1.0, 3.0] and start not in ([0.2, -0.1], [0.0, 0.0]) and start != target
    assert step_cases.transfer_case(draw) == (target, start, rate), "the same at every grading"


def _collectives_cases():
    spec = importlib.util.spec_from_file_location("coll_rubric_cases", COURSE.source / "collectives" / "rubric_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


coll = _collectives_cases()
COLLECTIVES_CONTRACTS = [coll.LOCAL, coll.ALL_REDUCE, coll.REDUCE_SCATTER, coll.GATHER, coll.MOMENTUM, coll.REVERSAL,
                         coll.PAYLOAD, coll.BUDGET]


@pytest.mark.parametrize("contract", COLLECTIVES_CONTRACTS, ids=lambda c: c.name)
def test_every_declared_dimension_of_the_collectives_is_varied_across_learners(contract):
    _every_dimension_varied(contract, "collectives", learners=80)


@settings(max_examples=60, deadline=None)
@given(learners, st.sampled_from([2, 4, 8]))
@example("kz0g5", 2)  # a corner of 1001 bytes over 7 ranks: 7 divides 6 x 1001, so floor division did not show
def test_the_collectives_cases_are_what_their_contracts_say_and_never_the_lessons(student, devices):
    """Shapes the docstrings allow, none of them the lesson's (4 rows a device, 8 features, 2 values a device, the
    visible call's 0.1 and 0.9), the same at every grading; the payload's and the budget's calls hold what floor
    division and rounding show on, and the notebook's device count."""
    draw = order.learner_draw(student, "collectives")
    for count in coll.local_counts(devices):
        x, y, w = coll.local_batch(count, draw)
        assert len(x) % count == 0 and len(x) // count != 4 and x.shape[1] == w.size != 8 and y.shape == (len(x),)
    size = coll.program_meshes(devices)[0]
    x, y, w = coll.all_reduce_batch(size, draw)
    assert len(x) % size == 0 and len(x) // size != 4 and w.size != 8
    x, y, w = coll.reduce_scatter_batch(size, draw)
    assert len(x) % size == 0 and w.size % size == 0 and w.size // size != 2
    vector = coll.gather_vector(size, draw)
    assert vector.size % size == 0 and vector.size // size != 2
    rate, beta = coll.momentum_rates(draw)
    assert (rate, beta) != (0.1, 0.9) and beta != 0.9 and rate != 0.1
    state = coll.momentum_state(size, draw)
    assert len({s.size for s in state}) == 1 and state[0].size % size == 0 and state[0].size // size != 2
    assert not np.array_equal(state[0], state[1]), "weights, momentum and gradient are three vectors"
    x, y, w = coll.reversal_batch(draw)
    assert x.shape == (16, 8) and x.dtype == y.dtype == np.float32
    if coll.REVERSAL.draw(draw)[0]["sorted"]:
        assert np.all(np.diff(y) >= 0)
    payloads = coll.payload_cases(draw)
    assert len(payloads) == 8 and any(p == 1 for _, p in payloads) and any(p == 16 for _, p in payloads)
    assert any((p - 1) * g % p for g, p in payloads), "a call where p does not divide (p - 1) G: floor and rounding show"
    size_bytes, ranks = coll.budget_case(devices, draw)
    assert ranks[-1] == devices and any(size_bytes % p for p in ranks), "a rank count that does not divide G"
    assert coll.budget_sizes(devices, draw)[3:] == [(size_bytes, p) for p in ranks], "the payload test's own sizes"
    for key, batch, blocks in coll.summed_batches(devices, draw):
        assert batch[0].shape[0] % blocks == 0, key
    again = coll.local_batch(devices, draw), coll.payload_cases(draw), coll.momentum_rates(draw)
    assert np.array_equal(again[0][0], coll.local_batch(devices, draw)[0]) and again[1:] == (payloads, (rate, beta))
