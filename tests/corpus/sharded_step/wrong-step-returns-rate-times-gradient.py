# scenario: the step returns learning_rate * gradient as its gradient, though it moves the weights by the loss's gradient: the gradient test charges it; the update, the placement and the ten steps are right and keep their points, and nothing says the step used learning rate 1
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# expect-message: the gradient at w = 0: differs from the host NumPy reference: it is 1/10 of the reference
# expect-no-message: learning rate 1
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        scaled = learning_rate * gradient
        return weights - scaled, value, scaled

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
