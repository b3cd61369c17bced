# scenario: hard-codes four devices: reshapes the batch into 4 blocks and averages the block means (fails when 4 does not divide the batch)
# base: solution
# expect-fail: test-loss-and-gradient
# expect-message: on a mesh of 1 device(s): it stopped working with 1 device(s)
# %% cell train-step
def loss(weights, features, labels):
    residual = (features @ weights - labels).reshape(4, -1)
    return jnp.mean(jnp.mean(residual**2, axis=1))


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
