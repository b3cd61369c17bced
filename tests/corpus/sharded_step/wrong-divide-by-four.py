# scenario: hard-codes four devices: sums one local mean gradient per device and divides by 4
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# (the loss, a global mean, is right and earns its 1 point of the 3: the loss and the gradient are judged apart)
# expect-message: the code assumes four devices
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value = loss(weights, features, labels)
        blocks = zip(jnp.split(features, len(devices)), jnp.split(labels, len(devices)))
        gradient = sum(jax.grad(loss)(weights, f, l) for f, l in blocks) / 4
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
