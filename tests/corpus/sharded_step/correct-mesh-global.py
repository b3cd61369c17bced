# scenario: correct, written differently: builds the shardings from the global mesh inside make_train_step, value_and_grad with has_aux
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.sum(residual**2) / features.shape[0]


def make_train_step(learning_rate):
    batch, weights_everywhere = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P())

    def with_aux(weights, features, labels):
        value = loss(weights, features, labels)
        return value, value

    def step(weights, features, labels):
        (value, _), gradient = jax.value_and_grad(with_aux, has_aux=True)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(weights_everywhere, batch, NamedSharding(mesh, P("data"))),
                   out_shardings=(weights_everywhere,) * 3)


train_step = make_train_step(0.1)
