# scenario: the step differentiates at the notebook's global w instead of its weights argument: right at w = 0 on the lesson batch, wrong from any other start
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-message: not from the notebook's own arrays
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(w, features, labels)
        return weights - learning_rate * gradient, value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
