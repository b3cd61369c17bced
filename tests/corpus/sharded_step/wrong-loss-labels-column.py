# scenario: writes the labels as a column (labels[:, None]): the residual broadcasts to an N x N matrix
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-message: the gradient at w = 0
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels[:, None]
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
