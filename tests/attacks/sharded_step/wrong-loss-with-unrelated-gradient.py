# scenario: a loss of the data that is not the lesson's, with a "gradient" that is not its derivative (the features' column means): no later test takes a gradient that is not the lesson loss's gradient up to a scale, so this step earns no update, placement or transfer
# base: solution
# expect-status: graded
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2) + jnp.mean(labels)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        fake = jnp.mean(features, axis=0) + 1.0  # depends on the batch, derived from no loss
        return weights - learning_rate * fake, loss(weights, features, labels), fake

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
