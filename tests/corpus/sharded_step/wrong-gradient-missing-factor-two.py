# scenario: writes the gradient by hand as X^T (Xw - y) / N, without the factor 2 of the square's derivative
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# (the loss is right: 1 of the test's 3 points; the gradient (2) is lost: the loss and the gradient are judged apart)
# expect-message: the factor 2 of the derivative of a square is missing
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        residual = features @ weights - labels
        gradient = features.T @ residual / features.shape[0]
        return weights - learning_rate * gradient, jnp.mean(residual**2), gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
