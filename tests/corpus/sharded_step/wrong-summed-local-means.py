# scenario: sums per-device mean gradients: the gradient is four times too large
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# (the loss, a global mean, is right: 1 of the test's 3 points; the gradient (2) is lost: the loss and the gradient are judged apart)
# expect-message: the per-device means were summed
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    # Each device's share of the batch gets its own mean gradient, and the
    # shares are added: one mean per device instead of one global mean.
    def step(weights, features, labels):
        shards = len(devices)
        value = loss(weights, features, labels)
        parts = [
            jax.grad(loss)(weights, f, l)
            for f, l in zip(jnp.split(features, shards), jnp.split(labels, shards))
        ]
        gradient = sum(parts)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(
        step,
        in_shardings=(replicated, rows, labels_sharding),
        out_shardings=(replicated, replicated, replicated),
    )


train_step = make_train_step(0.1)
