"""The hidden tests' inputs of sharded_step, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the programs' declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).
"""
from coursekit import data


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


def ten_steps_batch(devices: int):
    """test-ten-steps: 2 rows per device, 2 features."""
    return data.random_regression(seed=90204, rows=2 * devices, cols=2)


#: test-transfer's hidden call: transfer_step(true_weights, start, learning_rate) for another target
OTHER_TARGET, OTHER_START, OTHER_RATE = [0.5, -2.0], [1.0, 1.0], 0.02
