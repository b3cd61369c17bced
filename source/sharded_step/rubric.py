"""References for sharded_step's test cells, computed by the grader in NumPy.

Hidden inputs come from ``rubric_cases``, which the hidden tests import too; the
expected values come from the analytic gradient 2/N X^T (Xw - y), never from
JAX. Each test judges one skill: where a value also depends on an earlier
skill (the update depends on the gradient, placement and the ten steps on the
step), it is compared with the learner's own earlier values, so one mistake
costs one test; the loss and the gradient, two skills, are judged apart inside
their test (``Evidence.part``). Sub-meshes (``coursekit.meshes``) run the step on meshes of
other sizes than the notebook's.
"""
import numpy as np

from coursekit import data
from coursekit.checks import Dispatch, HostCopy
from coursekit.meshes import sub_mesh_sizes
from grader.submission.judge import Evidence, Mismatch, Mistake, Rubric, denominator_mistakes, keeps_inputs
from grader.submission.references import Reference
from grader.programs import Expect, Input, Program

from . import rubric_cases as cases

rubric = Rubric(after_submit={"quiz.answer"})  # the quiz's correctness: graded after submission, never by Validate


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


def step_programs(p: int) -> dict[str, str]:
    """The record key of each step a test exports beside program.placed, with its name in the learner's words."""
    return {"program.step": "your jitted training step, run by the grader on a batch it drew",
            **{f"program.mesh{size}.step": f"your training step on a mesh of {size} device(s), run by the grader on "
                                           "a batch it drew" for size in sub_mesh_sizes(p)},
            f"program.step_{cases.UPDATE_RATE:g}": f"your make_train_step({cases.UPDATE_RATE:g}), run by the grader "
                                                   "on a batch it drew"}


@rubric.programs("test-loss-and-gradient")
def programs_loss_and_gradient(p: int):
    return [Program("program.step", p, step_inputs(cases.unseen_batch(p)), expect=STEP_DATA_PARALLEL)] + [
        Program(f"program.mesh{size}.step", size, step_inputs(cases.sub_mesh_batch(size)), expect=STEP_DATA_PARALLEL)
        for size in sub_mesh_sizes(p)]


@rubric.programs("test-placement")
def programs_placement(p: int):
    return [Program("program.placed", p, step_inputs(cases.placement_batch(p)), expect=DATA_PARALLEL)]


@rubric.programs("test-update")
def programs_update(p: int):  # four features: see there
    return [Program("program.step_0.37", p, step_inputs(cases.update_program_batch(p)), expect=STEP_DATA_PARALLEL)]


def steps_stay_data_parallel(e: Evidence) -> None:
    """Each step the other tests exported, held to STEP_DATA_PARALLEL where it ran: its results replicated, the
    batch kept split (no all-gather in the compiled program, no collective carrying the batch). One that did not run
    (no record, or it failed on the grader's inputs) is charged by the test that runs it, not here."""
    for key, what in step_programs(e.num_devices).items():
        try:
            e.program(key, what=what)
        except Mismatch:
            continue
        e.program_expected(key, what=what, expect=STEP_DATA_PARALLEL)


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
    def named(x, y, w, *, devices: int, mesh: int | None = None) -> list[Mistake]:
        return denominator_mistakes(REFERENCES[which](x, y, w), devices=devices, count=len(y), mesh=mesh,
                                    derivative=which != "loss", **({"what": "loss"} if which == "loss" else {}))
    return named


def _elementwise(which: str):
    return lambda x, y, w, **_: Mistake(elementwise(x, y, w, which), ELEMENTWISE)


#: the loss and the gradient of a batch (x, y, w), each with its named mistakes. Where two of them give the same
#: value on a batch (at w = 0 with two features, the elementwise product halves the gradient exactly as a missing
#: factor 2 does), neither is named there (``diagnose``): the message says what differs, and another batch tells
#: them apart.
REFERENCES = {"loss": Reference(loss, (_denominators("loss"), _elementwise("loss"))),
              "gradient": Reference(gradient, (_denominators("gradient"), _elementwise("gradient")))}


def _close(e: Evidence, prefix: str, which: str, x, y, w, *, rtol: float, atol: float):
    """The recorded loss or gradient of one batch against the host reference, with the lesson's named mistakes."""
    e.check(f"{prefix}{which}", REFERENCES[which], (x, y, w), rtol=rtol, atol=atol,
            what=e.names.get(f"{prefix}{which}", f"the {which}"), devices=e.num_devices)


@rubric.test("test-loss-and-gradient", names={
    "lesson.loss": "the initial loss",
    "lesson.gradient": "the gradient at w = 0",
    "hidden.loss": "the loss on an unseen batch",
    "hidden.gradient": "the gradient on an unseen batch",
    "program.step": "your jitted training step, run by the grader on a batch it drew",
})
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
                _close(e, "lesson.", which, x, y, w, rtol=1e-6, atol=1e-6)
            except Mismatch as failure:
                if failure.named or not e.has(f"lesson.{which}"):  # named, or nothing recorded to tell apart
                    raise
                # The lesson batch could not tell the mistake (two give its value): the step's program, on the
                # grader's batch, may (in Validate it is not run: the lesson's failure stands).
                try:
                    _program_output(e, "program.step", which)
                except Mismatch as program:
                    raise Mismatch(f"{failure}; {program}", named=program.named) from None
                raise
            if e.has(f"hidden.{which}"):  # Python around the program: its own value (a jitted step is only exported)
                _close(e, "hidden.", which, hx, hy, hw, rtol=1e-4, atol=1e-5)
            _program_output(e, "program.step", which)
            for size in sub_mesh_sizes(e.num_devices):
                _program_output(e, f"program.mesh{size}.step", which, mesh=size)


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
    e.close(new_key, expected, rtol=rtol, atol=atol, mistakes=_rate_mistakes(start, own, actual, rate, rtol, atol),
            what=f"{e.name(new_key)} (weights - learning_rate * your step's gradient)")


def _steps_by_the_true_gradient(actual, start, rate: float, batch: tuple, rtol: float, atol: float) -> bool:
    """Weights moved by the learning rate times the loss's own gradient on ``batch`` (x, y, w): the update is right
    even when the gradient the step returns is not (learning_rate * gradient returned as the gradient, say), and that
    mistake costs the gradient test only."""
    x, y, _ = batch
    actual = np.asarray(actual, dtype=np.float64)
    return actual.shape == np.shape(start) and bool(np.allclose(
        actual, start - rate * gradient(x, np.asarray(y, dtype=np.float64), start), rtol=rtol, atol=atol))


def _rate_mistakes(start, own, actual, rate: float, rtol: float, atol: float) -> list[Mistake]:
    """An update's named mistakes: the gradient added, or another learning rate than the one given (read off the
    weights it returned)."""
    mistakes = [Mistake(start + rate * own, "the gradient was added: a step goes against the gradient, "
                                            "weights - learning_rate * gradient")]
    used = float(np.dot(start - actual, own) / np.dot(own, own))
    if used > 0 and np.allclose(actual, start - used * own, rtol=rtol, atol=atol) and not np.isclose(used, rate):
        mistakes.append(Mistake(actual, f"the step used learning rate {used:.4g}, not the learning_rate given to "
                                        "make_train_step"))
    return mistakes


@rubric.test("test-update", names={
    "lesson.new_w": "the weights after one step",
    "lesson.step_gradient": "the gradient your step returned",
    "hidden.new_w": "the new weights on an unseen batch at another learning rate",
    "hidden.step_gradient": "the gradient your step returned on an unseen batch",
    "program.step_0.37": "your make_train_step(0.37), run by the grader on a batch it drew",
})
def judge_update(e: Evidence):
    x, y, w = lesson()
    _update(e, "lesson.new_w", "lesson.step_gradient", w, 0.1, rtol=1e-6, atol=1e-6, data=(x, y, w))
    hx, hy, hw = cases.update_batch(e.num_devices)
    rate = cases.UPDATE_RATE
    if e.has("hidden.new_w") or e.has("hidden.step_gradient"):  # Python around the program (else only exported)
        _update(e, "hidden.new_w", "hidden.step_gradient", hw.astype(np.float64), rate, rtol=1e-4, atol=1e-5,
                data=(hx, hy, hw.astype(np.float64)))
    run = e.program("program.step_0.37")
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
    e.program_close("program.step_0.37", 0, start - rate * own, rtol=1e-4, atol=1e-5,
                    what=f"the new weights of your make_train_step({rate:g}) on a batch the grader drew (weights - "
                         "learning_rate * its own gradient)",
                    mistakes=_rate_mistakes(start, own, run.outputs[0].value.astype(np.float64), rate, 1e-4, 1e-5)
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
    e.require(e.number("hidden.host_round_trip", what="the host transfers of your training step") == HostCopy.NONE,
              "your training step moves its inputs through the host: on every call it copies the weights or the "
              "placed batch to host memory (jax.device_get, np.asarray, printing them) or places NumPy results back "
              "with jax.device_put, so every row is gathered in one place: compute the loss and gradient with JAX "
              "operations inside the jitted step, where each device works on its own rows")


@rubric.test("test-placement", names={
    "lesson.new_w.shards": "the new weights",
    "lesson.loss.shards": "the loss",
    "lesson.gradient.shards": "the gradient",
    "hidden.placed.new_w": "the new weights on an unseen batch",
    "hidden.placed.loss": "the loss on an unseen batch",
    "hidden.placed.gradient": "the gradient on an unseen batch",
    "hidden.device_count": "the number of devices",
    "hidden.one_program": "how your training step runs",
    "hidden.jitted_step": "whether make_train_step returns the jitted step",
    "program.placed": "your jitted training step's shardings",
})
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
    if not e.has("hidden.jitted_step"):  # an older record: nothing to judge
        return
    if e.has("hidden.one_program") and e.number("hidden.one_program") == Dispatch.OP_BY_OP:
        raise Mismatch("make_train_step returns a plain Python function, not a jitted step (see the placements)")
    e.require(e.number("hidden.jitted_step", what="whether make_train_step returns the jitted step") == 1, JITTED_STEP)


def _placements(e: Evidence):
    p = e.num_devices
    hx, hy, hw = cases.placement_batch(p)
    for prefix, d, batch in [("lesson.", 2, lesson()), ("hidden.placed.", 5, (hx, hy, hw.astype(np.float64)))]:
        suffix = ".shards" if prefix == "lesson." else ""
        for name, shape in [("new_w", (d,)), ("loss", ()), ("gradient", (d,))]:
            _replicated(e, f"{prefix}{name}{suffix}", shape, p)
        gradient_key = f"{prefix}gradient{suffix}"
        e.require(np.any(e.array(gradient_key) != 0), f"{e.name(gradient_key)} is zero: placing the outputs of a "
                                                      "step that computes nothing earns nothing")
        _require_gradient(e, e.array(gradient_key), *batch, e.name(gradient_key))
    e.require(e.number("hidden.device_count") == p, f"the notebook should use all {p} devices")
    _step_on_devices(e)
    # Traced in the kernel (coursekit.checks.one_program): a plain Python step gives the same values and, on these
    # small arrays, the same placements, so only its trace shows that nothing was jitted.
    e.require(e.number("hidden.one_program") != Dispatch.OP_BY_OP,
              "make_train_step returns a plain Python function, not a jitted step: JAX then runs its operations one "
              "at a time, each compiled on its own, and nothing pins where the inputs and results live; return "
              "jax.jit(step, in_shardings=(replicated, rows, labels_sharding), out_shardings=(replicated, replicated, "
              "replicated))")
    e.program_expected("program.placed")  # DATA_PARALLEL
    steps_stay_data_parallel(e)  # ... and so is every other step the tests exported


def _follows_first_step(e: Evidence, key: str, x, y, start, steps: int = 10):
    """Ten weights after ``start``, each one step of the rule the learner's first step applied (from its own values)."""
    name = e.name(key)
    trajectory = e.array(key, shape=(steps + 1, len(start))).astype(np.float64)
    e.require(np.allclose(trajectory[0], start), f"{name}: the loop should start from the given weights")
    g0 = gradient(x, y, trajectory[0])
    moved = trajectory[0] - trajectory[1]
    rate = float(np.dot(moved, g0) / np.dot(g0, g0))
    e.require(rate != 0 and np.allclose(moved, rate * g0, rtol=1e-3, atol=1e-6),
              f"{name}: the first step does not move the weights along the gradient, so the loop cannot be "
              "compared with a host loop (see the gradient and update tests)")
    expected = [trajectory[0]]
    for _ in range(steps):
        expected.append(expected[-1] - rate * gradient(x, y, expected[-1]))
    expected = np.stack(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    e.require(np.allclose(trajectory, expected, rtol=1e-4, atol=1e-5 * scale),
              f"{name}: the steps drift away from a host loop that repeats your first step with the loss's gradient: "
              "either a call does not start from the weights the previous call returned (or carries something else "
              "over between calls), or your step's gradient is wrong at weights other than the first (see the "
              "gradient test)")


@rubric.test("test-ten-steps", names={
    "lesson.trajectory": "ten steps on the lesson batch",
    "hidden.trajectory": "ten steps on an unseen batch",
})
def judge_ten_steps(e: Evidence):
    x, y, w = lesson()  # the visible record first: Validate judges it, then stops at the hidden one
    _follows_first_step(e, "lesson.trajectory", x, y, w)
    hx, hy, hw = cases.ten_steps_batch(e.num_devices, e.draw)  # over the step's contract, this learner's draw
    _follows_first_step(e, "hidden.trajectory", hx, hy, hw.astype(np.float64))  # a fresh step: its first call


def _transfer(true_weights, start, rate, labels_from=None):
    x, _ = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights) if labels_from is None else labels_from
    start = np.asarray(start, dtype=np.float64)
    return start - rate * gradient(x, y, start)


def _transfer_mistakes(true_weights, start, rate, p: int) -> list[Mistake]:
    x, lesson_y = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights)
    start = np.asarray(start, dtype=np.float64)
    g = gradient(x, y, start)
    return [
        Mistake(_transfer(true_weights, start, rate, labels_from=lesson_y),
                "it uses the lesson's labels y, not the labels of the new target host_x @ true_weights"),
        Mistake(start - 0.1 * g, "it uses the lesson's learning rate 0.1 (train_step), not learning_rate"),
        Mistake(_transfer(true_weights, np.zeros(2), rate), "it starts from w = 0, not from start"),
        Mistake(start - rate * p * g, f"its gradient is {p} times the global gradient: summed local means"),
        Mistake(start - rate * g / p, f"its gradient is divided by the number of devices ({p}): the mean over "
                                      f"N = {len(y)} examples already has the right denominator"),
    ]


def _steps_with_a_gradient(new_weights, true_weights, start, rate) -> bool:
    """Whether one step from ``start`` to ``new_weights`` moved along the loss's gradient on the transfer batch
    (up to a scale: a wrong denominator costs the gradient test, not the transfer)."""
    x, _ = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights)
    start = np.asarray(start, dtype=np.float64)
    return is_a_gradient((start - np.asarray(new_weights, dtype=np.float64)) / rate, x, y, start)


def _given_to_the_step(e: Evidence, target, start, rate) -> None:
    """What transfer_step handed make_train_step and its step in the hidden call (the test noted it): the rate, the
    start and the target's labels it was called with. A step from the lesson's start or at the lesson's rate can
    still point along the gradient (the check above allows any scale), so those are compared here, exactly."""
    what = e.name("transfer.other.sharded")
    if not e.has("transfer.other.given_rate"):
        return
    given_rate = e.number("transfer.other.given_rate", what="the learning rate transfer_step gave make_train_step")
    e.require(np.isclose(given_rate, rate, rtol=1e-6),
              f"{what}: transfer_step built make_train_step({given_rate:g}), not make_train_step({rate:g}) with the "
              "learning_rate it was called with")
    given_start = np.asarray(e.get("transfer.other.given_start").value, dtype=np.float64).ravel()
    e.require(given_start.shape == np.shape(start) and np.allclose(given_start, start, rtol=1e-6),
              f"{what}: transfer_step's step starts from {np.round(given_start, 4).tolist()[:4]}, not from the start "
              f"{list(np.asarray(start).tolist())} it was called with")
    x, _ = data.lesson_batch()
    labels = (x.astype(np.float32) @ np.asarray(target, dtype=np.float32)).astype(np.float64)
    given_labels = np.asarray(e.get("transfer.other.given_labels").value, dtype=np.float64).ravel()
    e.require(given_labels.shape == labels.shape and np.allclose(given_labels, labels, rtol=1e-5, atol=1e-5),
              f"{what}: transfer_step's step is given other labels than host_x @ {list(target)}, the target it was "
              "called with")


@rubric.test("test-transfer", names={
    "transfer.sharded": "transfer_step's sharded weights",
    "transfer.own_step": "one step of your make_train_step on the new labels",
    "transfer.host": "transfer_step's host weights",
    "transfer.other.sharded": "transfer_step's sharded weights for another target",
    "transfer.other.given_rate": "the learning rate transfer_step gave make_train_step for another target",
    "transfer.other.given_start": "the start transfer_step gave its step for another target",
    "transfer.other.given_labels": "the labels transfer_step gave its step for another target",
    "transfer.other.own_step": "your make_train_step inside transfer_step",
    "transfer.other.own_gradient": "the gradient of your make_train_step inside transfer_step",
    "transfer.other.host": "transfer_step's host weights for another target",
})
def judge_transfer(e: Evidence):
    p = e.num_devices
    expected = _transfer([-1.0, 3.0], [0.2, -0.1], 0.05)
    own = e.values("transfer.own_step", (2,))
    reason = "is not one step of your make_train_step(0.05) from [0.2, -0.1] on the labels host_x @ [-1, 3]"
    if not _steps_with_a_gradient(own, [-1.0, 3.0], [0.2, -0.1], 0.05):
        # the learner's step computes no gradient: its own result proves nothing here, and the message says only
        # what it can check (a result equal to that step's is one step of it: a wrong loss is charged elsewhere)
        if np.allclose(e.values("transfer.sharded", (2,)), own, rtol=1e-5, atol=1e-6):
            reason = ("is one step of your make_train_step(0.05), but that step does not move the weights along the "
                      "loss's gradient (see the loss and gradient test), so this test cannot credit it: it differs "
                      "from start - 0.05 * host_gradient(host_x, host_x @ [-1, 3], start)")
        else:
            reason = ("differs from start - 0.05 * host_gradient(host_x, host_x @ [-1, 3], start), and your "
                      "make_train_step(0.05) does not move the weights along the loss's gradient (see the loss and "
                      "gradient test)")
        own = expected
    e.close_to_any("transfer.sharded", [own], rtol=1e-5, atol=1e-6, reason=reason,
                   mistakes=_transfer_mistakes([-1.0, 3.0], [0.2, -0.1], 0.05, p))
    e.close("transfer.host", expected, rtol=1e-5, atol=1e-6,
            mistakes=_transfer_mistakes([-1.0, 3.0], [0.2, -0.1], 0.05, p))
    if e.get("transfer.sharded").kind == "jax_array":  # its placement, before any hidden value (Validate judges it)
        _placed_as_the_step(e, "transfer.sharded", "transfer.own_step")
    other_target, other_start, other_rate = cases.transfer_case(e.draw)  # over transfer_step's contract
    other_start = np.array(other_start)
    other = _transfer(other_target, other_start, other_rate)
    mistakes = _transfer_mistakes(other_target, other_start, other_rate, p)
    if e.has("transfer.other.own_step") and e.get("transfer.other.own_step").kind != "scalar":
        # Inside this call every output of make_train_step was moved by +1: the sharded result must carry the
        # shift, and a host result that carries it too was taken from the device (its weights or its gradient).
        own_other = e.values("transfer.other.own_step", (2,))
        _given_to_the_step(e, other_target, other_start, other_rate)
        if not _steps_with_a_gradient(own_other, other_target, other_start, other_rate):
            own_other = other
        # the shift was added in the step's own dtype (a float16 step rounds it: that costs the update test only)
        dtype = np.asarray(e.get("transfer.other.own_step").value).dtype
        shift_tol = max(1e-5, 4 * float(np.finfo(dtype).eps)) if dtype.kind == "f" else 1e-5
        e.close_to_any("transfer.other.sharded", [own_other + 1.0], rtol=shift_tol, atol=1e-6,
                       reason="is not the result of your make_train_step for the other target: return the "
                              "step's new weights unchanged")
        mistakes = [Mistake(own_other + 1.0, "it is a copy of the sharded result (np.asarray of the device "
                                             "weights): derive the host update from the formula with "
                                             "host_gradient in NumPy")] + mistakes
        recorded_gradient = e.get("transfer.other.own_gradient") if e.has("transfer.other.own_gradient") else None
        if recorded_gradient is not None and recorded_gradient.kind in ("array", "jax_array") and \
                np.shape(recorded_gradient.value) == (2,):  # a wrong gradient costs the gradient test, not this one
            own_gradient = np.asarray(recorded_gradient.value, dtype=np.float64)
            mistakes.insert(1, Mistake(other_start - other_rate * (own_gradient + 1.0),
                                       "it steps with the gradient the sharded step returned (np.asarray of the "
                                       "device gradient), so it checks nothing: derive the host update with "
                                       "host_gradient in NumPy"))
    else:
        e.close("transfer.other.sharded", other, rtol=1e-5, atol=1e-6, mistakes=mistakes)
        raise Mismatch(f"{e.name('transfer.other.sharded')}: transfer_step did not run make_train_step(learning_rate):"
                       " the sharded result must be the jitted step's new weights, computed on the devices")
    e.close("transfer.other.host", other, rtol=1e-5, atol=1e-6, mistakes=mistakes)
    # A host result is told last: the hidden values above name its cause (transfer_step did not run the step).
    _placed_as_the_step(e, "transfer.sharded", "transfer.own_step")
    _placed_as_the_step(e, "transfer.other.sharded", "transfer.other.own_step")


def _placed_as_the_step(e: Evidence, key: str, own_key: str) -> None:
    """The sharded result is placed as the learner's own step places its new weights (a step that returns host
    arrays, or places them wrongly, loses the placement test, not this one)."""
    own_step = e.get(own_key)
    if own_step.kind == "jax_array":
        e.array(key, shape=(2,), jax=True)
        e.replicas_close(key, e.values(key, (2,)), rtol=1e-6, atol=1e-7, against="the result's own value")
        e.shard_shapes(key, (2,), devices=len(own_step.shards))


@rubric.test("test-quiz", names={
    "quiz.answer": "the multiple-choice answer",
})
def judge_quiz(e: Evidence):
    e.equal("quiz.answer", 2, mistakes={
        1: "summing four local means gives four times the global mean gradient",
        3: "one device's gradient is a local quantity; it does not follow the global loss",
    })


# A function the tests call with the caller's arrays is charged at its own test if it writes into them.
keeps_inputs(rubric, "test-transfer", "inputs.transfer_step", "transfer_step",
             ["true_weights", "start", "learning_rate"])
