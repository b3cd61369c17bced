# scenario: the loss is the mean absolute error, not the mean squared error: loss and gradient wrong; transfer_step itself is right and its sharded result is one step of the learner's own make_train_step(0.05): the transfer test must not say it is not
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-message: is one step of your make_train_step(0.05), but that step does not move the weights along the loss's gradient
# expect-no-message: is not one step of your make_train_step(0.05)
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(jnp.abs(residual))


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
