"""The hidden tests' inputs of sharded_step, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the programs' declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).
"""
from coursekit import data
from coursekit.contracts import Contract

#: this learner's draw of the cases drawn over a contract (``coursekit.contracts``): the grader sets it in the kernel
#: after the learner's last cell (``grader.submission.order``) and judges with the same number (``Evidence.draw``);
#: 0 is the instructor's own draw
LEARNER_DRAW = 0


def unseen_batch(devices: int):
    """test-loss-and-gradient: (x, y, w), 4 rows per device and 3 features."""
    return data.random_regression(seed=90201, rows=4 * devices, cols=3)


def sub_mesh_batch(size: int):
    """test-loss-and-gradient on a mesh of ``size`` devices: 3 rows per device."""
    return data.random_regression(seed=90210 + size, rows=3 * size, cols=3)


UPDATE_RATE = 0.37  # test-update: a fresh make_train_step(UPDATE_RATE)


def update_batch(devices: int):
    """test-update: 2 rows per device, 2 features."""
    return data.random_regression(seed=90202, rows=2 * devices, cols=2)


def update_program_batch(devices: int):
    """test-update's exported step: its example batch (the grader draws its own values of these shapes). Four
    features, not the lesson's two: the update is judged against the step's own gradient, accepted when it is a
    scaled gradient at the given weights (cosine > 1 - 1e-4). In two dimensions a gradient taken at the wrong point
    lies that close to the right direction for about 1 batch in 100 the grader draws; in four, about 1 in 10^5."""
    return data.random_regression(seed=90205, rows=2 * devices, cols=4)


def placement_batch(devices: int):
    """test-placement: one row per device, 5 features."""
    return data.random_regression(seed=90203, rows=devices, cols=5)


#: make_train_step(learning_rate)'s step, ten times from the weights it returned: any rows per device and features,
#: drawn from all but the lesson's 2 features (one case, one compilation, as the fixed batch had)
TEN_STEPS = Contract(name="ten_steps", dimensions={"rows": (1, 2, 3, 4), "features": (1, 3, 4, 5)}, extra=1)


def ten_steps_batch(devices: int, draw: int = 0):
    """test-ten-steps over its contract: (x, y, w) of this learner's draw, rows a multiple of the devices."""
    case = TEN_STEPS.draw(draw)[0]
    return data.random_regression(seed=case["seed"], rows=case["rows"] * devices, cols=case["features"])


#: transfer_step(true_weights, start, learning_rate) for another target: any target, start and positive rate; none
#: of the drawn ones is the lesson's call's ([-1, 3], [0.2, -0.1], 0.05), the lesson's rate 0.1 or a start of 0, and
#: no start is a target (a step from the target itself does not move)
TRANSFER = Contract(name="transfer_step", dimensions={
    "target": ((0.5, -2.0), (1.5, 0.5), (-2.0, 1.0), (2.5, 2.5), (-0.5, -1.5), (3.0, -1.0)),
    "start": ((1.0, 1.0), (-1.0, 0.5), (0.5, -1.5), (2.0, 0.0), (-0.5, -0.5)),
    "rate": (0.01, 0.02, 0.03, 0.07, 0.08),
}, corners=(), extra=1)


def transfer_case(draw: int = 0) -> tuple[list, list, float]:
    """test-transfer's hidden call over its contract: (true_weights, start, learning_rate) of this learner's draw."""
    case = TRANSFER.draw(draw)[0]
    return list(case["target"]), list(case["start"]), case["rate"]
