# scenario: believes the global mean needs every row on every device: constrains the batch to be replicated inside the step (an all-gather of the whole batch), then computes the whole gradient on each device: right values, no data parallelism
# base: solution
# expect-fail: test-placement
# expect-message: gathers the batch
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        # the mean is over the global batch, so every device needs all of it
        features = jax.lax.with_sharding_constraint(features, replicated)
        labels = jax.lax.with_sharding_constraint(labels, replicated)
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
