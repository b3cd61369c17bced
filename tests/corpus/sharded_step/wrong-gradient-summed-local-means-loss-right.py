# scenario: the loss is the global mean, but the gradient sums the per-device mean gradients (4 times the global gradient); the learner prints their gradient; the loss earns its 1 point of the test's 3, the gradient is named
# base: solution
# expect-fail: test-loss-and-gradient
# expect-points: test-loss-and-gradient=1
# expect-message: 4 times the global gradient: the per-device means were summed
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value = loss(weights, features, labels)
        blocks = zip(jnp.split(features, len(devices)), jnp.split(labels, len(devices)))
        gradient = sum(jax.grad(loss)(weights, f, l) for f, l in blocks)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
# %% append train-step
print("my loss at w = 0:", float(train_step(w, x, y)[1]))
print("my gradient at w = 0:", np.asarray(train_step(w, x, y)[2]).tolist())
