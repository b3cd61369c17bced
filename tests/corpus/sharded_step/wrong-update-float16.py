# scenario: returns the new weights in float16 "to save memory": the update loses precision
# base: solution
# expect-fail: test-update test-ten-steps
# expect-message: the weights after one step
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean((features @ weights - labels) ** 2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return (weights - learning_rate * gradient).astype(jnp.float16), value, gradient


    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
