# scenario: scales the gradient by the learning rate and then steps with the learning rate again: the returned gradient is lr times too small and the step lr^2
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# (the loss is right: 1 of the test's 3 points; the gradient (2) is lost: the loss and the gradient are judged apart)
# expect-message: the gradient at w = 0
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        gradient = learning_rate * gradient
        return weights - learning_rate * gradient, value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
