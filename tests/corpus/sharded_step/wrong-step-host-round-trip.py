# scenario: the training step copies the weights and the placed batch to the host with jax.device_get, computes the loss and gradient with NumPy arithmetic and places the results back replicated: right values and placements, and under jit device_get hands back the tracers, so the exported program is a device program with no all-gather, yet every call in the kernel gathers every row on the host
# base: solution
# expect-fail: test-placement
# expect-message: your training step moves its inputs through the host
# expect-status: graded
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        w_host, x_host, y_host = jax.device_get((weights, features, labels))  # every row, on the host
        residual = x_host @ w_host - y_host
        value = (residual * residual).sum() / len(y_host)
        gradient = 2 * x_host.T @ residual / len(y_host)
        return tuple(jax.device_put(v, replicated) for v in (w_host - learning_rate * gradient, value, gradient))

    return step


train_step = make_train_step(0.1)
