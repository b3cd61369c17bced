# scenario: a step whose "gradient" is a constant (ones), wrapped in a loss linear in the weights (sum(w) plus terms of the data) so that the constant is exactly that loss's derivative and the loss changes with the batch: a relief that judged the later tests against the step's own gradient whenever it was its own loss's derivative scored this 7/11 (red team, stop 51; 1/11 without it). No later test takes a gradient that is not the lesson loss's gradient up to a scale
# base: solution
# expect-status: graded
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# %% cell train-step
def loss(weights, features, labels):
    return jnp.sum(weights) + jnp.mean(features) + jnp.mean(labels)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, fake = jax.value_and_grad(loss)(weights, features, labels)  # fake == ones
        return weights - learning_rate * fake, value, fake

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
