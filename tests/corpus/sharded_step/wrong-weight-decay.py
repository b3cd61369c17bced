# scenario: adds weight decay (0.01) to the update: invisible at the lesson's w = 0, wrong from any other start
# base: solution
# expect-fail: test-update test-ten-steps
# expect-message: the new weights of your make_train_step(0.37) on a batch the grader drew
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights * (1 - 0.01 * learning_rate) - learning_rate * gradient, value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
