# scenario: puts every output of the step on the first device only, not replicated
# base: solution
# expect-fail: test-placement
# expect-message: a shard on each of the 4 devices
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    first = jax.sharding.SingleDeviceSharding(devices[0])
    compiled = jax.jit(step, in_shardings=(replicated, rows, labels_sharding))

    def placed_step(weights, features, labels):
        return tuple(jax.device_put(value, first) for value in compiled(weights, features, labels))

    return placed_step


train_step = make_train_step(0.1)
