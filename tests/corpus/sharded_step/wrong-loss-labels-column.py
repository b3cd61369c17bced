# scenario: writes the labels as a column (labels[:, None]): the residual broadcasts to an N x N matrix; the update and transfer tests judge the step against its own gradient, which the grader checks is the derivative of the loss the step returns (probes of its program), so the wrong loss costs the loss test, the placement test (the N x N broadcast all-gathers the labels inside the step) and the ten steps against the host loop, not five tests
# base: solution
# expect-fail: test-loss-and-gradient test-placement test-ten-steps
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
