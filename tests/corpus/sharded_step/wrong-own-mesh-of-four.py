# scenario: hard-codes four devices: make_train_step builds its own mesh of jax.devices()[:4] instead of using rows/replicated
# base: solution
# expect-fail: test-loss-and-gradient
# expect-message: on a mesh of 1 device(s): it stopped working with 1 device(s)
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    four = Mesh(np.array(jax.devices()[:4]), ("data",))
    split_rows, split_labels, copies = (NamedSharding(four, P("data", None)), NamedSharding(four, P("data")),
                                        NamedSharding(four, P()))

    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(copies, split_rows, split_labels), out_shardings=(copies, copies, copies))


train_step = make_train_step(0.1)
