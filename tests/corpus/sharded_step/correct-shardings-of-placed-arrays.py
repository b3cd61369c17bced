# scenario: correct, written differently: the step's in_shardings are the shardings of the placed arrays (w.sharding, x.sharding, y.sharding), and every output takes w's replicated sharding
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(w.sharding, x.sharding, y.sharding),
                   out_shardings=(w.sharding, w.sharding, w.sharding))


train_step = make_train_step(0.1)
