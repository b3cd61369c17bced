# scenario: hard-codes the lesson's printed numbers instead of computing them
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# expect-message: the loss of your training step, on a batch the grader drew: wrong on inputs it had not seen
# %% cell train-step
def loss(weights, features, labels):
    return jnp.float32(4.875)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        gradient = jnp.array([-5.25, -0.75], dtype=jnp.float32)
        return jnp.array([0.525, 0.075], dtype=jnp.float32), jnp.float32(4.875), gradient

    return jax.jit(
        step,
        in_shardings=(replicated, rows, labels_sharding),
        out_shardings=(replicated, replicated, replicated),
    )


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    answer = np.array([0.32375, 0.34625], dtype=np.float32)
    return jnp.asarray(answer), answer


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
