# scenario: the training step, first called by a test cell with hidden tests, raises an exception class named after the hidden seed
# base: solution
# expect-status: graded
# expect-fail: test-loss-and-gradient
# (the hidden part runs after the learner's last cell, so the step raises only there: test-update and test-placement,
# which judge the visible part's values, no longer fail with it; the class name still never reaches the feedback)
# %% cell train-step
import linecache
import re
import sys


def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


_step = make_train_step(0.1)
_raised = []


def train_step(weights, features, labels):
    cell = "".join(linecache.getlines(sys._getframe(1).f_code.co_filename))
    if "BEGIN HIDDEN TESTS" in cell and not _raised:
        _raised.append(cell)
        raise type(re.search(r"seed=\d+", cell).group(), (Exception,), {})("the class name carries it")
    return _step(weights, features, labels)
