# scenario: correct, written differently: jax.grad and the loss called separately, one replicated sharding for all outputs
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    predictions = jnp.dot(features, weights)
    return ((predictions - labels) ** 2).mean()


def make_train_step(learning_rate):
    gradient_of_loss = jax.grad(loss)

    def step(weights, features, labels):
        g = gradient_of_loss(weights, features, labels)
        return weights - learning_rate * g, loss(weights, features, labels), g

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding), out_shardings=replicated)


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    targets = np.float32(host_x @ np.float32(true_weights))
    begin = np.float32(start)
    on_devices, _, _ = make_train_step(learning_rate)(
        jax.device_put(begin, replicated), jax.device_put(host_x, rows), jax.device_put(targets, labels_sharding))
    return on_devices, begin.astype(np.float64) - learning_rate * host_gradient(host_x, targets, begin.astype(np.float64))


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
# %% cell quiz
answer = 2
