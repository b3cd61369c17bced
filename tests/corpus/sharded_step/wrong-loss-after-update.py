# scenario: returns the loss at the new weights (after the update) instead of the loss the gradient was taken at
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=2
# (the gradient is right: 2 of the test's 3 points; the loss (1) is lost: the loss and the gradient are judged apart)
# expect-message: the initial loss
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        gradient = jax.grad(loss)(weights, features, labels)
        new_weights = weights - learning_rate * gradient
        return new_weights, loss(new_weights, features, labels), gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
