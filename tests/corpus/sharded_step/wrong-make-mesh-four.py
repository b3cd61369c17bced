# scenario: hard-codes four devices with jax.make_mesh((4,), ("data",)) inside make_train_step
# base: solution
# expect-fail: test-loss-and-gradient
# expect-message: use the mesh and shardings the notebook defines, not a mesh of your own
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean(jnp.square(features @ weights - labels))


def make_train_step(learning_rate):
    four = jax.make_mesh((4,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))

    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    everywhere = NamedSharding(four, P())
    return jax.jit(step, in_shardings=(everywhere, NamedSharding(four, P("data", None)), NamedSharding(four, P("data"))),
                   out_shardings=(everywhere, everywhere, everywhere))


train_step = make_train_step(0.1)
