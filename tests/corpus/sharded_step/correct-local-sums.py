# scenario: correct, written differently: per-device numerators summed and divided once by the global count
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def block_sum(weights, features, labels):
        return jnp.sum((features @ weights - labels) ** 2)

    def step(weights, features, labels):
        blocks = len(devices)
        total = features.shape[0]
        numerators = [jax.grad(block_sum)(weights, f, l)
                      for f, l in zip(jnp.split(features, blocks), jnp.split(labels, blocks))]
        gradient = sum(numerators) / total
        return weights - learning_rate * gradient, loss(weights, features, labels), gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
