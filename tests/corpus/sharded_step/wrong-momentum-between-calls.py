# scenario: the step keeps a velocity between calls (momentum nobody asked for): the first step is right, later ones drift
# base: solution
# expect-fail: test-ten-steps test-placement
# expect-points: test-placement=1
# expect-message: carries something else over between calls
# expect-message: Return a jitted step
# (issue 58, item 5: the velocity lives in Python around the jitted step, which the docstring does not allow: one point
# of the placement test, in the docstring's words; the drift itself costs the ten steps)
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels, velocity):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        velocity = 0.5 * velocity + gradient
        return weights - learning_rate * velocity, value, gradient, velocity

    compiled = jax.jit(step, in_shardings=(replicated, rows, labels_sharding, replicated),
                       out_shardings=(replicated, replicated, replicated, replicated))
    state = {}

    def train(weights, features, labels):
        velocity = state.get(weights.shape, jnp.zeros(weights.shape, dtype=jnp.float32))
        new_weights, value, gradient, state[weights.shape] = compiled(weights, features, labels, velocity)
        return new_weights, value, gradient

    return train


train_step = make_train_step(0.1)
