# scenario: converts the step's results to NumPy on the host: right values, nothing left on the devices
# base: solution
# expect-fail: test-placement
# expect-message: expected a JAX array
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    compiled = jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                       out_shardings=(replicated, replicated, replicated))

    def on_host(weights, features, labels):
        return tuple(np.asarray(value) for value in compiled(weights, features, labels))

    return on_host


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
