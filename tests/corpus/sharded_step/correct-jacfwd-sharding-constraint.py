# scenario: correct, written differently: the gradient by jax.jacfwd, the outputs placed with with_sharding_constraint inside a jit given only in_shardings
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    return jnp.mean(jnp.square(features @ weights - labels))


def make_train_step(learning_rate):
    @jax.jit
    def step(weights, features, labels):
        gradient = jax.jacfwd(loss)(weights, features, labels)
        outputs = (weights - learning_rate * gradient, loss(weights, features, labels), gradient)
        return tuple(jax.lax.with_sharding_constraint(o, replicated) for o in outputs)

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding))


train_step = make_train_step(0.1)
