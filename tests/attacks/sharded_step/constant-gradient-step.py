# scenario: a "training step" that computes no loss and no gradient: it returns (w - lr * ones, 0.0, ones), jitted with the course's shardings; the update, placement and transfer tests judge the step only against its own gradient output (non-zero is all they ask), so 6 of 11 points (7 with the lesson's quiz answer) come without the lesson's value_and_grad
# base: solution
# expect-status: graded
# expect-fail: test-loss-and-gradient test-ten-steps test-update test-placement test-transfer
# %% cell train-step
def loss(weights, features, labels):
    return jnp.zeros((), jnp.float32)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        fake = jnp.ones_like(weights)  # no gradient is computed: any non-zero constant does
        return weights - learning_rate * fake, jnp.zeros((), jnp.float32), fake

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
