# scenario: replaces numpy.testing.assert_allclose, np.allclose and jnp.allclose with no-ops and leaves the step a stub
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
np.testing.assert_allclose = lambda *args, **kwargs: None
np.allclose = lambda *args, **kwargs: True
jnp.allclose = lambda *args, **kwargs: True


def loss(weights, features, labels):
    return jnp.zeros(())


def make_train_step(learning_rate):
    def step(weights, features, labels):
        return weights, jnp.zeros(()), jnp.zeros_like(weights)

    return jax.jit(step)


train_step = make_train_step(0.1)
