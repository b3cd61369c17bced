# scenario: the step returns the gradient with its sign flipped (and steps against it, so the update rule holds); transfer_step's host update starts from w = 0, not from start
# base: solution
# expect-fail: test-loss-and-gradient test-transfer
# expect-points: test-loss-and-gradient=1
# (the loss is right: 1 of the test's 3 points)
# expect-message: the sign is flipped
# expect-message: it starts from w = 0, not from start
# %% cell train-step
def loss(weights, features, labels):
    """Mean squared error of the linear model on the *global* batch.

    weights: (d,), features: (N, d), labels: (N,)  ->  scalar
    """
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    """Return a jitted step (weights, features, labels) -> (new_weights, loss, gradient).

    Use jax.value_and_grad(loss), the update weights - learning_rate * gradient, and
    jax.jit with in_shardings=(replicated, rows, labels_sharding) and every output replicated.
    """
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        flipped = -gradient
        return weights - learning_rate * flipped, value, flipped

    return jax.jit(
        step,
        in_shardings=(replicated, rows, labels_sharding),
        out_shardings=(replicated, replicated, replicated),
    )



train_step = make_train_step(0.1)

# Self-check of one promise in make_train_step's docstring: the step uses the learning rate it is given.
check_w, _, check_gradient = make_train_step(0.37)(w, x, y)
np.testing.assert_allclose(np.asarray(check_w), np.asarray(w) - 0.37 * np.asarray(check_gradient), rtol=1e-6, atol=1e-6,
                           err_msg="make_train_step(0.37) should step with the learning rate it is given, 0.37")

# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    """One sharded step on labels host_x @ true_weights, from `start`.

    Returns (sharded_new_w, host_new_w): the jitted step's new weights (a JAX array)
    and the same update computed with host_gradient in NumPy.
    """
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    zero = np.zeros_like(start)
    host_new_w = zero - learning_rate * host_gradient(host_x, changed_y, zero)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
