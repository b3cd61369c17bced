"""References for collectives' test cells, computed by the grader in NumPy.

Gradients come from the analytic 2/N X^T (Xw - y), payloads from the ring
formulas; hidden inputs come from ``rubric_cases``, which the hidden tests import. The
timing test is judged on how the learner's timer measured a probe whose result
completes a known time after the call returns, never on speed.

One skill per test: a program's values are compared with the reference or,
where the program is built from an earlier TODO, with the sum of the learner's
own local contributions (a wrong denominator in ``local_contribution`` costs that
test only). Hidden runs use sub-meshes of the kernel's devices
(``coursekit.meshes``), so code that assumes four devices fails in a default run.
"""
import numpy as np

from coursekit import data
from grader.rubric import Evidence, Expect, Input, Mismatch, Program, Reference, Rubric, mistake, scaled

from . import rubric_cases as cases
from . import rubric_keys as keys

rubric = Rubric(after_submit={keys.QUIZ})  # the quiz's correctness: graded after submission, never by Validate

ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER = "stablehlo.all_reduce", "stablehlo.reduce_scatter", "stablehlo.all_gather"


program_meshes = cases.program_meshes


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


def own_values_or_reference(e: Evidence, own_key: str, reference) -> list:
    """The values a result may match: the host reference, and the learner's own programs' values recorded under
    ``own_key`` (the reversal test compares the learner's programs with themselves)."""
    candidates = [np.asarray(reference, dtype=np.float64)]
    if e.has(own_key):
        own = e.array(own_key, shape=np.shape(reference)).astype(np.float64)
        if np.linalg.norm(own) > 1e-3 * np.linalg.norm(reference):  # a degenerate (zero) value proves nothing
            candidates.append(own)
    return candidates


def own_or_reference(e: Evidence, own_key: str, reference, tested_key: str) -> list:
    """The values a program may match: the host reference, and the sum of the learner's own local contributions
    when the local-contribution test recorded the same one (``own_base``)."""
    base, known = own_base(e, own_key, reference, tested_key)
    return [np.asarray(reference, dtype=np.float64)] + ([base] if known else [])


def program_close(e: Evidence, key: str, candidates: list, what: str, mistakes, *, rtol: float, atol: float):
    e.close_to_any(key, candidates, rtol=rtol, atol=atol, what=what, mistakes=mistakes,
                   reason="differs from the host NumPy reference (and from the sum of your own local contributions)")


def portions_close(e: Evidence, key: str, expected, devices: int, *, rtol=1e-5, atol=1e-7, what: str,
                   candidates=None, mistakes=()):
    """Each of ``devices`` shards holds exactly its consecutive slice of the global value."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = e.close_to_any(key, candidates or [expected], rtol=rtol, atol=atol, what=what,
                            mistakes=TRANSPOSED(expected, devices) + list(mistakes),
                            reason="differs from the host NumPy reference")
    portion = len(expected) // devices
    recorded = e.get(key, what=what)
    shapes = sorted({tuple(s.value.shape) for s in recorded.shards}) if recorded.kind == "jax_array" else []
    if devices > 1 and shapes == [tuple(expected.shape)]:
        raise Mismatch(f"{what}: every device holds all {len(expected)} values: the result should stay "
                       f"partitioned, {portion} per device (out_specs P('data'))")
    e.shard_shapes(key, (portion,), devices=devices, what=what)
    starts = set()
    for shard in recorded.shards:
        try:
            start, stop = shard.index[0]
        except (TypeError, ValueError, IndexError):
            raise Mismatch(f"{what}: the shard on device {shard.device} has no slice index") from None
        start = 0 if start is None else start
        stop = len(expected) if stop is None else stop
        e.require(type(start) is int and type(stop) is int and 0 <= start < stop <= len(expected),
                  f"{what}: the shard on device {shard.device} has a slice index outside the value")
        e.require(stop - start == portion, f"{what}: device {shard.device} should hold {portion} consecutive values")
        e.require(np.allclose(shard.value.astype(np.float64), actual[start:stop], rtol=rtol, atol=atol),
                  f"{what}: the portion on device {shard.device} is not its slice of the global value")
        starts.add(start)
    e.require(len(starts) == devices, f"{what}: the devices should hold different portions")


TRANSPOSED = mistake("the values are right but in the wrong places: device r should hold the consecutive slice "
                     "r*d/p ... (r+1)*d/p; this is a transposed shard layout (reshape to (p, d/p), not (d/p, p))",
                     lambda expected, devices: expected.reshape(-1, devices).T.ravel()
                     if len(expected) % devices == 0 else None)


def contribution_mistakes(expected, p: int, mesh: int | None = None, *, scale_free: bool = True):
    """``scale_free``: also the mistakes that scale every case alike (a missing factor 2, a flipped sign): not
    where the same function was right on another case (the lesson's), since such a mistake would show there too."""
    return scaled(expected, contribution_factors(p, mesh, scale_free=scale_free))


def contribution_factors(p: int, mesh: int | None = None, *, scale_free: bool = True) -> dict[float, str]:
    """The wrong factors of a local contribution's sum (``contribution_mistakes``), with their words."""
    k = mesh or p
    factors = {
        float(k): f"{k} times the global gradient: divided by the local row count n_local = N/{k} instead of "
                  "the global count N (the summed gradient is p times too large)",
        1.0 / k: f"the global gradient divided by the number of devices ({k})",
        k / 4: f"scaled by {k}/4 with {k} device(s): the code assumes four devices",
    }
    if mesh and p != 4:  # n_local x p equals N only when the blocks are the notebook's p devices
        factors.setdefault(k / p, f"scaled by {k}/{p} with {k} block(s): divided by n_local x {p} (the notebook's "
                                  "device count) instead of global_count, which is N only when the rows are split "
                                  f"over exactly {p} devices")
    if scale_free:
        factors.setdefault(0.5, "half the reference: the factor 2 is missing")
        factors.setdefault(-1.0, "the sign is flipped")
    return factors


def own_base(e: Evidence, own_key: str, reference, tested_key: str):
    """``(base, known)``: the sum of the learner's own local contributions recorded here, when the local-contribution
    test recorded the same sum on the same batch (``tested_key``: ``lesson.terms``, or one of its hidden
    ``hidden.batch{seed}.sum``); a wrong local_contribution, named or not, then costs that test only. Otherwise the
    reference: a local_contribution that answers its own test one way and a later test's cell another (or a
    library function patched in between) gets no say in what the later programs must compute."""
    reference = np.asarray(reference, dtype=np.float64)
    if e.has(own_key):
        own = e.array(own_key, shape=reference.shape).astype(np.float64)
        tested = e.elsewhere("test-local-contribution", tested_key)
        tested = tested.sum(axis=0) if tested is not None and tested.ndim == 2 else tested
        if tested is not None and tested.shape == own.shape and np.all(np.isfinite(own)) and \
                np.linalg.norm(own) > 1e-3 * np.linalg.norm(reference) and np.allclose(own, tested, rtol=1e-5, atol=1e-7):
            return own, True  # (a degenerate, zero sum proves nothing)
    return reference, False


def reduction_mistakes(base, p: int, mesh: int | None = None, *, own_known: bool):
    """The mistakes of a collective program whose value should be ``base``: the learner's own summed local
    contributions when ``own_known`` (their local count is then judged by the local-contribution test alone, so a
    program k times that sum reduced twice), else the reference, where k times is either mistake."""
    k = mesh or p
    twice = (f"{k} times the sum of your own local contributions (which are right, or judged on their own): the "
             f"reduction was applied twice: a psum of a value already summed over the {k} devices (psum twice, or "
             "psum and psum_scatter both) multiplies it by the device count: combine the local contributions with "
             "one collective") if own_known else (
             f"{k} times the global gradient: either each device divided by its local row count n_local = N/{k} "
             f"instead of N, or the reduction was applied twice (a psum of a value already summed over the {k} "
             "devices)")
    factors = contribution_factors(p, mesh)
    if k != 1:  # k times the base: said as a reduction applied twice
        factors[float(k)] = twice
    mistakes = scaled(base, factors)
    if k > 1 and not own_known:
        mistakes += scaled(base, {float(k * k): f"{k * k} times the global gradient: the normalization went wrong "
                                                f"twice: each device divided by its local row count N/{k} and the "
                                                "reduction was applied twice"})
    return mistakes


@rubric.test("test-local-contribution")
def judge_local_contribution(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    e.check(keys.LESSON_TERMS, TERMS, (x, y, w, p), rtol=1e-5, atol=1e-7, devices=p)
    # the lesson's case passed: a mistake that scales every case alike (the factor 2, the sign) cannot be the cause
    for count in cases.local_counts(p):
        e.check(f"hidden.{count}.terms", HIDDEN_TERMS, (*cases.local_batch(count, e.draw), count), rtol=1e-4, atol=1e-5,
                what=f"local_contribution of {count} block(s) of an unseen batch", devices=p, mesh=count)
    # The sums on the very batches the later tests judge their programs against (``own_base``): right here too, so a
    # local_contribution wrong only for those blocks' shapes is charged here, not excused there.
    for key, batch, count in cases.summed_batches(p, e.draw):
        e.check(key, SUMMED, batch, rtol=1e-4, atol=1e-5, devices=p, mesh=count,
                what=f"the sum of local_contribution over {count} block(s) of an unseen batch")


#: each device's local contribution of a batch (x, y, w) in ``blocks`` blocks, and their sum (the gradient), with the
#: mistakes named on them (``devices``: the notebook's count; ``mesh``: the blocks, where they are not the devices)
TERMS = Reference(terms, (lambda x, y, w, blocks, *, devices, mesh=None:
                          contribution_mistakes(terms(x, y, w, blocks), devices, mesh=mesh),))
HIDDEN_TERMS = Reference(terms, (lambda x, y, w, blocks, *, devices, mesh=None:
                                 contribution_mistakes(terms(x, y, w, blocks), devices, mesh=mesh, scale_free=False),))
SUMMED = Reference(gradient, (lambda x, y, w, *, devices, mesh: contribution_mistakes(gradient(x, y, w), devices,
                                                                                       mesh=mesh),))


def _meshes_ran(e: Evidence, key: str, size: int, what: str):
    e.require(e.has(key), f"{what}: no result: the program did not run on a mesh of {size} device(s) (does "
                          "make_collectives use the mesh it is given, with any number of devices that divides "
                          "the data, or does it assume the lesson's four devices?)")


@rubric.test("test-all-reduce")
def judge_all_reduce(e: Evidence):
    p, key = e.num_devices, keys.LESSON_ALL_REDUCE
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w)
    e.array(key, shape=(8,), jax=True)
    base, known = own_base(e, keys.LESSON_OWN_SUM, g, "lesson.terms")
    program_close(e, key, own_or_reference(e, keys.LESSON_OWN_SUM, g, "lesson.terms"),
                  e.name(key), reduction_mistakes(base, p, own_known=known), rtol=1e-5, atol=1e-7)
    e.shard_shapes(key, (8,), devices=p)
    e.replicas_close(key, e.array(key), rtol=1e-6, atol=1e-7,
                     against="the all-reduced value: the replicas disagree")
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.all_reduce", f"all_gradient on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        hx, hy, hw = cases.all_reduce_batch(size, e.draw)
        g = gradient(hx, hy, hw)
        e.array(key, shape=g.shape, jax=True, what=what)
        tested = cases.summed_key("all_reduce", size)  # the local-contribution test's sum on this very batch
        base, known = own_base(e, keys.HIDDEN_OWN_SUM(size=size), g, tested)
        program_close(e, key, own_or_reference(e, keys.HIDDEN_OWN_SUM(size=size), g, tested), what,
                      reduction_mistakes(base, p, mesh=size, own_known=known), rtol=1e-4, atol=1e-5)
        e.shard_shapes(key, g.shape, devices=size, what=what)
    program_gradient(e, "all_gradient", split_output=False)


@rubric.test("test-reduce-scatter")
def judge_reduce_scatter(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w)
    e.array(keys.LESSON_REDUCE_SCATTER, shape=(8,), jax=True)
    base, known = own_base(e, keys.LESSON_OWN_SUM, g, "lesson.terms")
    portions_close(e, keys.LESSON_REDUCE_SCATTER, g, p, what=e.name(keys.LESSON_REDUCE_SCATTER),
                   candidates=own_or_reference(e, keys.LESSON_OWN_SUM, g, "lesson.terms"),
                   mistakes=reduction_mistakes(base, p, own_known=known))
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.reduce_scatter", f"shard_gradient on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        hx, hy, hw = cases.reduce_scatter_batch(size, e.draw)  # this draw's values per device
        g = gradient(hx, hy, hw)
        e.array(key, shape=g.shape, jax=True, what=what)
        tested = cases.summed_key("reduce_scatter", size)  # the local-contribution test's sum on this very batch
        base, known = own_base(e, keys.HIDDEN_OWN_SUM(size=size), g, tested)
        portions_close(e, key, g, size, rtol=1e-4, atol=1e-5, what=what,
                       candidates=own_or_reference(e, keys.HIDDEN_OWN_SUM(size=size), g, tested),
                       mistakes=reduction_mistakes(base, p, mesh=size, own_known=known))
    program_gradient(e, "shard_gradient", split_output=True)


STACKED = "all_gather without tiled=True stacks a new axis: gather with tiled=True to join the portions"


@rubric.test("test-all-gather")
def judge_all_gather(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w).astype(np.float32).astype(np.float64)  # the test placed the host gradient, split
    e.array("lesson.gathered_here", shape=(8,), jax=True, shape_mistakes={(p, 8 // p): STACKED},
            what="gather of the split host gradient")
    e.close("lesson.gathered_here", g, rtol=1e-6, atol=1e-7, what="gather of the split host gradient")
    e.shard_shapes("lesson.gathered_here", (8,), devices=p, what="gather of the split host gradient")
    e.replicas_close("lesson.gathered_here", g, rtol=1e-6, atol=1e-7, what="gather of the split host gradient",
                     against="the gathered vector: every device should hold all of it")
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.gathered", f"gather on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        vector = cases.gather_vector(size, e.draw)
        e.array(key, shape=vector.shape, jax=True, what=what, shape_mistakes={(size, len(vector) // size): STACKED})
        e.close(key, vector, rtol=1e-6, atol=1e-7, what=what)
        e.shard_shapes(key, vector.shape, devices=size, what=what)
        e.replicas_close(key, vector, rtol=1e-6, atol=1e-7, what=what)
    what = "gather, run by the grader on a vector it drew"
    run = e.program_expected("program.gather", what=what)
    e.program_close("program.gather", 0, run.inputs[0].astype(np.float64), rtol=1e-6, atol=1e-7, what=what)


def _lowered(e: Evidence, prefix: str, where: str):
    expectations = {
        "all_gradient": (ALL_REDUCE, (REDUCE_SCATTER, ALL_GATHER)),
        "shard_gradient": (REDUCE_SCATTER, (ALL_REDUCE, ALL_GATHER)),
        "gather": (ALL_GATHER, (ALL_REDUCE, REDUCE_SCATTER)),
    }
    for name, (wanted, unwanted) in expectations.items():
        what = f"{name} lowered {where}"
        text = e.text(f"{prefix}{name}", what=what)
        e.require("stablehlo" in text and "func.func" in text, f"{what}: this is not lowered StableHLO text")
        e.require(wanted in text, f"{what}: the lowered program has no {wanted}")
        for other in unwanted:
            e.require(other not in text, f"{what}: the lowered program also contains {other}")


def gradient_inputs(batch) -> tuple[Input, ...]:
    """(features, labels, weights) of a hidden case's batch: split by rows, split, replicated."""
    x, y, w = batch
    return Input(x.shape, ("data", None)), Input(y.shape, ("data",)), Input(w.shape)


def vector_input(batch) -> tuple[Input, ...]:
    """The gathered vector: the batch's weights, split."""
    return (Input(batch[2].shape, ("data",)),)


def one_region(collective: str, outputs: tuple[bool, ...] | None = None) -> Expect:
    """The program computes in one shard_map region and communicates with ``collective`` only, and no collective
    carries the data itself: the collective the test is about does the work (a plain jit whose partitioner adds
    collectives, or a gather of everything followed by a local computation, is not the lesson's program, whatever
    values it returns). ``outputs``: replicated (True) or split (False), for a program the grader runs."""
    return Expect(outputs=outputs, region=collective, no_data_moved=True)


@rubric.programs("test-all-reduce")
def programs_all_reduce(p: int):
    return [Program("program.all_gradient", p, gradient_inputs(cases.program_batch(p)),
                    expect=one_region("all_reduce", (True,)))]


@rubric.programs("test-reduce-scatter")
def programs_reduce_scatter(p: int):
    return [Program("program.shard_gradient", p, gradient_inputs(cases.program_batch(p)),
                    expect=one_region("reduce_scatter", (False,)))]


@rubric.programs("test-all-gather")
def programs_all_gather(p: int):
    return [Program("program.gather", p, vector_input(cases.program_batch(p)), expect=one_region("all_gather", (True,)))]


@rubric.programs("test-lowered")
def programs_lowered(p: int):  # read for their collectives, not run (the tests above run them)
    batch = cases.lowered_batch(p)
    return [Program("program.lowered.all_gradient", p, gradient_inputs(batch), run=False, expect=one_region("all_reduce")),
            Program("program.lowered.shard_gradient", p, gradient_inputs(batch), run=False,
                    expect=one_region("reduce_scatter")),
            Program("program.lowered.gather", p, vector_input(batch), run=False, expect=one_region("all_gather"))]


def own_factor(e: Evidence) -> float:
    """How the learner's own summed local contributions compare with the gradient (1 when right; p when each
    divides by the local count, ...), from the values the test recorded for the programs' batch.

    The factor stands for the learner's own contributions only when the local-contribution test recorded the same
    sum on that batch (``own_base``); otherwise, and for a zero sum above all (a program that returns zeros), the
    program is judged against the reference: the record comes from the kernel and must never let the program
    compute less than the gradient."""
    ex, ey, ew = cases.program_batch(e.num_devices)
    reference = gradient(ex, ey, ew)
    own = e.array(keys.PROGRAM_OWN_SUM, shape=reference.shape, what="your summed local contributions")
    factor = float(np.dot(own, reference) / np.dot(reference, reference))
    e.require(np.allclose(own, factor * reference, rtol=1e-4, atol=1e-6),
              "your local contributions do not sum to a multiple of the gradient, so the program cannot be judged "
              "(see the local-contribution test)")
    return factor if own_factor_known(e) else 1.0


def own_factor_known(e: Evidence) -> bool:
    """Whether the learner's own summed contributions (the programs' batch) stand for the program (``own_base``)."""
    ex, ey, ew = cases.program_batch(e.num_devices)
    return own_base(e, keys.PROGRAM_OWN_SUM, gradient(ex, ey, ew), cases.PROGRAM_SUM)[1]


def program_gradient(e: Evidence, name: str, *, split_output: bool):
    """The program itself, run by the grader on a batch it drew: the sum of the learner's own local
    contributions (``own_factor`` times the gradient), replicated or split as the lesson asks."""
    key, what = f"program.{name}", f"{name}, run by the grader on a batch it drew"
    run = e.program_expected(key, what=what)  # one region, reducing with the test's collective (programs_*)
    x, y, w = run.inputs
    expected = own_factor(e) * gradient(x, y, w)
    e.program_close(key, 0, expected, rtol=1e-4, atol=1e-5, what=what,
                    mistakes=reduction_mistakes(expected, e.num_devices, own_known=own_factor_known(e)))
    if split_output:
        portion = len(w) // e.num_devices
        e.require(all(shape == (portion,) for shape in run.outputs[0].shard_shapes),
                  f"{what}: each device should keep only its {portion} values")


def _programs(e: Evidence):
    """The three programs themselves, exported by the kernel and read by the grader: their collectives come
    from the programs, never from text the kernel reports (each one region, as ``programs_lowered`` declares)."""
    for name in ["all_gradient", "shard_gradient", "gather"]:
        e.program_expected(f"program.lowered.{name}", what=f"{name}, read by the grader from the program itself")


@rubric.test("test-lowered")
def judge_lowered(e: Evidence):
    _lowered(e, "lowered.", "on the lesson's mesh")
    _lowered(e, "hidden.lowered.", "for an unseen batch")
    _programs(e)


@rubric.test("test-quiz")
def judge_quiz(e: Evidence):
    e.equal(keys.QUIZ, 2, mistakes={
        1: "a reduce-scatter followed by a gather of the full vector moves as many bytes as the all-reduce",
        3: "an unchanged global shape says nothing about communication",
    })
