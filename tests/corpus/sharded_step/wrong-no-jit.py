# scenario: forgets jax.jit: make_train_step returns the plain Python step, so nothing pins its placements
# base: solution
# expect-fail: test-placement
# expect-message: not a jitted step
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return step


train_step = make_train_step(0.1)
