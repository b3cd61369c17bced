"""References for sharded_step's test cells, computed by the grader in NumPy.

Hidden inputs come from ``rubric_cases``, which the hidden tests import too; the
expected values come from the analytic gradient 2/N X^T (Xw - y), never from
JAX. Each test judges one skill: where a value also depends on an earlier
skill (the update depends on the gradient, placement and the ten steps on the
step), it is compared with the learner's own earlier values, so one mistake
costs one test; the loss and the gradient, two skills, are judged apart inside
their test (``Evidence.part``). Sub-meshes (``coursekit.meshes``) run the step on meshes of
other sizes than the notebook's. This module holds the ``Rubric``, the step's references and programs, and the
loss and gradient, update and placement tests; ``rubric_transfer`` the ten steps, the transfer and the quiz.
"""
import numpy as np

from coursekit import data
from coursekit.meshes import sub_mesh_sizes
from grader.rubric import (Dispatch, Evidence, Expect, HostCopy, Input, Mismatch, Program, Reference, Rubric,
                           denominator_mistakes, mistake)

from . import rubric_cases as cases
from . import rubric_keys as keys

rubric = Rubric(after_submit={keys.QUIZ})  # the quiz's correctness: graded after submission, never by Validate


def step_inputs(batch) -> tuple[Input, ...]:
    """(weights, features, labels) of a hidden case's batch (x, y, w): replicated, split by rows, split by rows."""
    rows, cols = batch[0].shape
    return Input((cols,)), Input((rows, cols), ("data", None)), Input((rows,), ("data",))


# The placed step: every output replicated, and the batch stays split inside it: the compiler all-reduces the
# partial sums. An all-gather in the compiled step brings every row to every device (a constraint to replicated
# features, say): right values, no data parallelism. Read by the grader from the step it compiled (after
# partitioning) for its own inputs, never from anything the kernel reports.
DATA_PARALLEL = Expect(outputs=(True, True, True), compiled_gather=False, no_data_moved=True, says=(
    ("gathers", "your jitted training step gathers the batch onto every device (its compiled program has an "
                "all-gather): keep the rows split, P('data', None), as in_shardings places them; each device works "
                "on its own rows and the compiler all-reduces the partial sums"),
    ("moves_data", "your jitted training step copies the batch to every device (a collective in it carries as many "
                   "values as the batch: a psum of buffers each device fills with its rows is an all-gather written "
                   "as an all-reduce): keep the rows split; each device works on its own rows and only the partial "
                   "sums cross devices")))


#: every other step the tests export (make_train_step's step on the grader's batch, on each smaller mesh, and
#: make_train_step(0.37)'s) is the same program on other shapes and meshes: held to the same, in the placement test
#: (the skill it judges), in its own words
STEP_DATA_PARALLEL = Expect(outputs=(True, True, True), compiled_gather=False, no_data_moved=True, says=(
    ("gathers", "{what}: its compiled program gathers the batch onto every device (an all-gather): keep the rows "
                "split, P('data', None), as in_shardings places them; each device works on its own rows and the "
                "compiler all-reduces the partial sums"),
    ("moves_data", "{what}: it copies the batch to every device (a collective in it carries as many values as the "
                   "batch: a psum of buffers each device fills with its rows is an all-gather written as an "
                   "all-reduce): keep the rows split; each device works on its own rows and only the partial sums "
                   "cross devices")))


def step_programs(p: int) -> list:
    """The key of each step a test exports beside program.placed (its words name it in the learner's terms)."""
    return [keys.STEP_PROGRAM, *(keys.MESH_STEP_PROGRAM(size=size) for size in sub_mesh_sizes(p)),
            keys.RATE_STEP_PROGRAM(rate=cases.UPDATE_RATE)]


@rubric.programs("test-loss-and-gradient")
def programs_loss_and_gradient(p: int):
    return [Program(keys.STEP_PROGRAM, p, step_inputs(cases.unseen_batch(p)), expect=STEP_DATA_PARALLEL)] + [
        Program(keys.MESH_STEP_PROGRAM(size=size), size, step_inputs(cases.sub_mesh_batch(size)),
                expect=STEP_DATA_PARALLEL) for size in sub_mesh_sizes(p)]


@rubric.programs("test-placement")
def programs_placement(p: int):
    return [Program(keys.PLACED_PROGRAM, p, step_inputs(cases.placement_batch(p)), expect=DATA_PARALLEL)]


@rubric.programs("test-update")
def programs_update(p: int):  # four features: see there
    return [Program(keys.RATE_STEP_PROGRAM(rate=cases.UPDATE_RATE), p, step_inputs(cases.update_program_batch(p)),
                    expect=STEP_DATA_PARALLEL)]


def steps_stay_data_parallel(e: Evidence) -> None:
    """Each step the other tests exported, held to STEP_DATA_PARALLEL where it ran: its results replicated, the
    batch kept split (no all-gather in the compiled program, no collective carrying the batch). One that did not run
    (no record, or it failed on the grader's inputs) is charged by the test that runs it, not here."""
    for key in step_programs(e.num_devices):
        try:
            e.program(key)
        except Mismatch:
            continue
        e.program_expected(key, expect=STEP_DATA_PARALLEL)


def _program_output(e: Evidence, key: str, which: str, mesh: int | None = None):
    """The step program itself, on the grader's own batch: its loss (output 2) or its gradient (output 3)."""
    where = f" on a mesh of {mesh} device(s)" if mesh else ""
    run = e.program(key, what=f"your training step{where}")
    w, x, y = (a.astype(np.float64) for a in run.inputs)
    e.program_check(key, 1 if which == "loss" else 2, REFERENCES[which], (x, y, w), devices=mesh or e.num_devices,
                    mesh=mesh, what=f"the {which} of your training step{where}, on a batch the grader drew")


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ w - y) / len(y)


def loss(x, y, w):
    return float(np.mean((x.astype(np.float64) @ w - y) ** 2))


def lesson():
    x, y = data.lesson_batch()
    return x, y, np.zeros(2)


ELEMENTWISE = ("the features were multiplied elementwise by the weights (features * weights), not as a matrix "
               "product (features @ weights): the loss then averages n x d squares instead of n")


def elementwise(x, y, w, which: str):
    """The loss or gradient of the elementwise-product mistake: mean((x * w - y[:, None])**2) and its gradient."""
    x, residual = x.astype(np.float64), x.astype(np.float64) * w - np.asarray(y, dtype=np.float64)[:, None]
    return float(np.mean(residual**2)) if which == "loss" else 2 * np.sum(x * residual, axis=0) / residual.size


def _denominators(which: str):
    """The lessons' wrong denominators of a loss or gradient on a batch (x, y, w), on ``devices`` devices."""
    def named(x, y, w, *, devices: int, mesh: int | None = None):
        return denominator_mistakes(REFERENCES[which](x, y, w), devices=devices, count=len(y), mesh=mesh,
                                    derivative=which != "loss", **({"what": "loss"} if which == "loss" else {}))
    return named


def _elementwise(which: str):
    return mistake(ELEMENTWISE, lambda x, y, w, **_: elementwise(x, y, w, which))


#: the loss and the gradient of a batch (x, y, w), each with its named mistakes. Where two of them give the same
#: value on a batch (at w = 0 with two features, the elementwise product halves the gradient exactly as a missing
#: factor 2 does), neither is named there (``diagnose``): the message says what differs, and another batch tells
#: them apart.
REFERENCES = {"loss": Reference(loss, (_denominators("loss"), _elementwise("loss"))),
              "gradient": Reference(gradient, (_denominators("gradient"), _elementwise("gradient")))}


def _close(e: Evidence, keys: dict, which: str, x, y, w, *, rtol: float, atol: float):
    """The recorded loss or gradient of one batch against the host reference, with the lesson's named mistakes."""
    e.check(keys[which], REFERENCES[which], (x, y, w), rtol=rtol, atol=atol, devices=e.num_devices)


@rubric.test("test-loss-and-gradient")
def judge_loss_and_gradient(e: Evidence):
    """Two skills, judged apart (the cell's 3 points): the loss (1) and the gradient (2). Each is checked on the
    lesson batch, in the step's program itself on a batch the grader draws, and in the programs make_train_step
    builds for whatever mesh the notebook's names refer to (values computed in the kernel are not enough). A step
    that is Python around its program is also checked on an unseen batch in the kernel (what the Python does to the
    results); a jitted step is not run there: that would compile and run the very program the grader runs."""
    x, y, w = lesson()
    hx, hy, hw = cases.unseen_batch(e.num_devices)
    for which, points in [("loss", 1), ("gradient", 2)]:
        with e.part(f"the {which}", points=points):
            try:
                _close(e, keys.LESSON, which, x, y, w, rtol=1e-6, atol=1e-6)
            except Mismatch as failure:
                if failure.named or not e.has(keys.LESSON[which]):  # named, or nothing recorded to tell apart
                    raise
                # The lesson batch could not tell the mistake (two give its value): the step's program, on the
                # grader's batch, may (in Validate it is not run: the lesson's failure stands).
                try:
                    _program_output(e, keys.STEP_PROGRAM, which)
                except Mismatch as program:
                    raise Mismatch(f"{failure}; {program}", named=program.named) from None
                raise
            if e.has(keys.HIDDEN[which]):  # Python around the program: its own value (a jitted step is only exported)
                _close(e, keys.HIDDEN, which, hx, hy, hw, rtol=1e-4, atol=1e-5)
            _program_output(e, keys.STEP_PROGRAM, which)
            for size in sub_mesh_sizes(e.num_devices):
                _program_output(e, keys.MESH_STEP_PROGRAM(size=size), which, mesh=size)


def is_a_gradient(own, x, y, w) -> bool:
    """Whether ``own`` is the loss's gradient at ``w`` up to a non-zero scale (a wrong denominator, a missing
    factor 2, a flipped sign: mistakes the gradient test names and charges). A step judged against its own
    gradient must have computed one: a constant or a value unrelated to the data earns no update or placement."""
    own, true = np.asarray(own, dtype=np.float64).ravel(), gradient(x, y, w).ravel()
    if own.shape != true.shape or not np.all(np.isfinite(own)) or not np.any(own != 0) or not np.any(true != 0):
        return False
    cosine = float(np.dot(own, true) / (np.linalg.norm(own) * np.linalg.norm(true)))
    return abs(cosine) > 1 - 1e-4 and 1e-3 < np.linalg.norm(own) / np.linalg.norm(true) < 1e3


def _require_gradient(e: Evidence, own, x, y, w, what: str) -> None:
    e.require(is_a_gradient(own, x, y, w), f"{what} is not the loss's gradient, nor a scaled one: a step judged "
                                           "against its own gradient must compute one (see the gradient test)")


def _update(e: Evidence, new_key: str, gradient_key: str, start, rate: float, *, rtol: float, atol: float,
            data: tuple):
    own = e.values(gradient_key, np.shape(start))
    e.require(np.any(own != 0), f"{e.name(gradient_key)} is zero: the update cannot be judged (see the gradient test)")
    _require_gradient(e, own, *data, e.name(gradient_key))
    actual = e.values(new_key, np.shape(start))
    expected = start - rate * own
    if np.allclose(actual, expected, rtol=rtol, atol=atol) or _steps_by_the_true_gradient(actual, start, rate, data,
                                                                                           rtol, atol):
        return
    e.close(new_key, expected, rtol=rtol, atol=atol, mistakes=UPDATE.named(start, own, actual, rate, tol=(rtol, atol)),
            what=f"{e.name(new_key)} (weights - learning_rate * your step's gradient)")


def _steps_by_the_true_gradient(actual, start, rate: float, batch: tuple, rtol: float, atol: float) -> bool:
    """Weights moved by the learning rate times the loss's own gradient on ``batch`` (x, y, w): the update is right
    even when the gradient the step returns is not (learning_rate * gradient returned as the gradient, say), and that
    mistake costs the gradient test only."""
    x, y, _ = batch
    actual = np.asarray(actual, dtype=np.float64)
    return actual.shape == np.shape(start) and bool(np.allclose(
        actual, start - rate * gradient(x, np.asarray(y, dtype=np.float64), start), rtol=rtol, atol=atol))


def _other_rate(start, own, actual, rate: float, *, tol: tuple[float, float]):
    """The weights returned, when they are a step with another learning rate than the one given (read off them)."""
    used = float(np.dot(start - actual, own) / np.dot(own, own))
    if used > 0 and np.allclose(actual, start - used * own, rtol=tol[0], atol=tol[1]) and not np.isclose(used, rate):
        return actual, {"used": used}
    return None


#: an update on a case (start, the step's own gradient, the weights it returned, the rate): start - rate * gradient,
#: and its named mistakes: the gradient added, or another learning rate than the one given
UPDATE = Reference(lambda start, own, actual, rate: start - rate * own, (
    mistake("the gradient was added: a step goes against the gradient, weights - learning_rate * gradient",
            lambda start, own, actual, rate, **_: start + rate * own),
    mistake("the step used learning rate {used:.4g}, not the learning_rate given to make_train_step", _other_rate)))


@rubric.test("test-update")
def judge_update(e: Evidence):
    x, y, w = lesson()
    _update(e, keys.LESSON_NEW_W, keys.LESSON_STEP_GRADIENT, w, 0.1, rtol=1e-6, atol=1e-6, data=(x, y, w))
    hx, hy, hw = cases.update_batch(e.num_devices)
    rate, program = cases.UPDATE_RATE, keys.RATE_STEP_PROGRAM(rate=cases.UPDATE_RATE)
    if e.has(keys.HIDDEN_NEW_W) or e.has(keys.HIDDEN_STEP_GRADIENT):  # Python around the program (else exported)
        _update(e, keys.HIDDEN_NEW_W, keys.HIDDEN_STEP_GRADIENT, hw.astype(np.float64), rate, rtol=1e-4, atol=1e-5,
                data=(hx, hy, hw.astype(np.float64)))
    run = e.program(program)
    own = run.outputs[2].value if len(run.outputs) == 3 else None
    e.require(own is not None and own.shape == run.inputs[0].shape and np.any(own != 0),
              f"your make_train_step({rate:g}), run by the grader on a batch it drew, does not return (new weights, "
              "loss, gradient) with a non-zero gradient")
    start = run.inputs[0].astype(np.float64)
    _require_gradient(e, own, run.inputs[1], run.inputs[2].astype(np.float64), start,
                      f"the gradient of your make_train_step({rate:g}) on a batch the grader drew")
    if _steps_by_the_true_gradient(run.outputs[0].value, start, rate, (run.inputs[1], run.inputs[2], start), 1e-4,
                                   1e-5):
        return
    e.program_close(program, 0, start - rate * own, rtol=1e-4, atol=1e-5,
                    what=f"the new weights of your make_train_step({rate:g}) on a batch the grader drew (weights - "
                         "learning_rate * its own gradient)",
                    mistakes=UPDATE.named(start, own, run.outputs[0].value.astype(np.float64), rate, tol=(1e-4, 1e-5))
                    if run.outputs[0].value.shape == start.shape else [])


def _replicated(e: Evidence, key: str, shape, p: int):
    """A JAX array with a whole copy on each of the ``p`` devices, every copy equal to the array's own value."""
    own = e.array(key, shape=shape, jax=True)
    e.shard_shapes(key, shape, devices=p)
    e.replicas_close(key, own, rtol=1e-6, atol=1e-7, against="the array's own value: the replicas disagree")


def _step_on_devices(e: Evidence):
    """The call itself, watched in the kernel (coursekit.checks.host_round_trip): under jax.jit device_get hands back
    its traced arguments, so a step that copies the batch to the host and places NumPy results back exports as a
    device program; only the call shows the copies."""
    e.require(e.outcome(keys.HOST_ROUND_TRIP, HostCopy) is HostCopy.NONE,
              "your training step moves its inputs through the host: on every call it copies the weights or the "
              "placed batch to host memory (jax.device_get, np.asarray, printing them) or places NumPy results back "
              "with jax.device_put, so every row is gathered in one place: compute the loss and gradient with JAX "
              "operations inside the jitted step, where each device works on its own rows")


@rubric.test("test-placement")
def judge_placement(e: Evidence):
    """Two parts (the cell's 2 points): where the step's inputs and results live (1), and the step as the one jitted
    program the lesson asks for (1): make_train_step's docstring says "Return a jitted step", and only the function
    jax.jit made is the program the grader runs itself; Python around it could do anything between calls (a host
    round trip included) where no exported program shows it."""
    with e.part("the placements", points=1) as placements:
        _placements(e)
    with e.part("the jitted step", points=1):
        # credited for a step placed as the lesson says: a step whose placements are wrong loses both points
        e.require(placements.failure is None, "not judged: the placements above are wrong")
        _jitted_step(e)


JITTED_STEP = ("make_train_step returns Python around the jitted step, not the jitted step itself: its docstring says "
               "\"Return a jitted step (weights, features, labels) -> (new_weights, loss, gradient)\": return what "
               "jax.jit(step, in_shardings=..., out_shardings=...) gives, unchanged; anything around it runs on the "
               "host on every call, where the grader cannot judge it as the program")


def _jitted_step(e: Evidence):
    """make_train_step(0.2) is the function jax.jit made (recorded in the kernel: coursekit.programs.is_program)."""
    if not e.has(keys.JITTED_STEP):  # an older record: nothing to judge
        return
    if e.has(keys.ONE_PROGRAM) and e.outcome(keys.ONE_PROGRAM, Dispatch) is Dispatch.OP_BY_OP:
        raise Mismatch("make_train_step returns a plain Python function, not a jitted step (see the placements)")
    e.require(e.number(keys.JITTED_STEP) == 1, JITTED_STEP)


def _placements(e: Evidence):
    p = e.num_devices
    hx, hy, hw = cases.placement_batch(p)
    for placed, d, batch in [(keys.LESSON_PLACED, 2, lesson()),
                             (keys.HIDDEN_PLACED, 5, (hx, hy, hw.astype(np.float64)))]:
        for key, shape in zip(placed, [(d,), (), (d,)]):  # new weights, loss, gradient
            _replicated(e, key, shape, p)
        gradient_key = placed[2]
        e.require(np.any(e.array(gradient_key) != 0), f"{e.name(gradient_key)} is zero: placing the outputs of a "
                                                      "step that computes nothing earns nothing")
        _require_gradient(e, e.array(gradient_key), *batch, e.name(gradient_key))
    e.require(e.number(keys.DEVICE_COUNT) == p, f"the notebook should use all {p} devices")
    _step_on_devices(e)
    # Traced in the kernel (coursekit.checks.one_program): a plain Python step gives the same values and, on these
    # small arrays, the same placements, so only its trace shows that nothing was jitted.
    e.require(e.outcome(keys.ONE_PROGRAM, Dispatch) is not Dispatch.OP_BY_OP,
              "make_train_step returns a plain Python function, not a jitted step: JAX then runs its operations one "
              "at a time, each compiled on its own, and nothing pins where the inputs and results live; return "
              "jax.jit(step, in_shardings=(replicated, rows, labels_sharding), out_shardings=(replicated, replicated, "
              "replicated))")
    e.program_expected(keys.PLACED_PROGRAM)  # DATA_PARALLEL
    steps_stay_data_parallel(e)  # ... and so is every other step the tests exported
