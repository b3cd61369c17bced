# scenario: correct, written differently: the placement contract built once at module level from the notebook's own shardings (a functools.partial of jax.jit, and a dict of the output shardings), nothing assumes four devices; a hidden test that only rebinds the notebook's names cannot reach these captured values, so the sub-mesh parts must rebuild from the learner's cells
# base: solution
# expect-fail:
# %% cell train-step
import functools

STEP_OUTPUTS = {"out_shardings": (replicated, replicated, replicated)}
placed_jit = functools.partial(jax.jit, in_shardings=(replicated, rows, labels_sharding), **STEP_OUTPUTS)


def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    """Return a jitted step (weights, features, labels) -> (new_weights, loss, gradient)."""
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return placed_jit(step)


train_step = make_train_step(0.1)

check_w, _, check_gradient = make_train_step(0.37)(w, x, y)
np.testing.assert_allclose(np.asarray(check_w), np.asarray(w) - 0.37 * np.asarray(check_gradient), rtol=1e-6, atol=1e-6)
