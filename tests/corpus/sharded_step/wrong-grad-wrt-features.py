# scenario: differentiates with respect to the features (argnums=1) instead of the weights: the "gradient" has the batch's shape
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-points: test-loss-and-gradient=1
# (the loss is right: 1 of the test's 3 points; the gradient (2) is lost: the loss and the gradient are judged apart)
# expect-message: the gradient at w = 0
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss, argnums=1)(weights, features, labels)
        return weights - learning_rate * gradient.mean(axis=0), value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
