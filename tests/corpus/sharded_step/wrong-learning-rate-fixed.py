# scenario: the step ignores make_train_step's learning_rate and always uses the lesson's 0.1
# base: solution
# expect-fail: test-update
# expect-message: the step used learning rate 0.1, not the learning_rate given to make_train_step
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - 0.1 * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
