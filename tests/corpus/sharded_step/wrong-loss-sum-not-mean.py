# scenario: the loss sums the squared residuals instead of averaging them: loss and gradient N times too large
# base: solution
# expect-fail: test-loss-and-gradient
# expect-message: a sum over the examples, not their mean
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.sum(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
