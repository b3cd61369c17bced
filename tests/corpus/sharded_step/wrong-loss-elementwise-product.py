# scenario: multiplies the features elementwise by the weights (features * weights) instead of features @ weights, broadcasting the labels as a column: at w = 0 with two features the gradient is exactly half the reference, as if the factor 2 were missing; the grader's own batch (three features, other weights) shows the cause
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-message: the features were multiplied elementwise by the weights
# expect-no-message: factor 2
# %% cell train-step
def loss(weights, features, labels):
    residual = features * weights - labels[:, None]
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
