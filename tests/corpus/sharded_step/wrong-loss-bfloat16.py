# scenario: computes the loss in bfloat16 "for speed": the lesson's small integers survive, an unseen batch's values lose precision
# base: solution
# expect-fail: test-loss-and-gradient test-ten-steps
# expect-message: the loss of your training step
# expect-message: on a batch the grader drew: wrong on inputs it had not seen
# %% cell train-step
def loss(weights, features, labels):
    residual = features.astype(jnp.bfloat16) @ weights.astype(jnp.bfloat16) - labels.astype(jnp.bfloat16)
    return jnp.mean(residual**2).astype(jnp.float32)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
