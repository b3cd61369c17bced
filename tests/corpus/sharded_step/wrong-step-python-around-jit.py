# scenario: make_train_step returns a Python function that calls the jitted step (it blocks until the results are ready, and could do anything between calls, a host round trip included): right values and placements, but the docstring asks for the jitted step itself: one point of the placement test, in the docstring's words
# base: solution
# expect-fail: test-placement
# expect-points: test-placement=1
# expect-message: Return a jitted step
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    jitted = jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                     out_shardings=(replicated, replicated, replicated))

    def waited(weights, features, labels):
        return jax.block_until_ready(jitted(weights, features, labels))

    return waited


train_step = make_train_step(0.1)
