# scenario: correct, written differently: a class that takes the notebook's mesh once, builds its NamedShardings in __init__ and is itself make_train_step (an instance made at module level), and a closure that holds the jitted step; nothing assumes four devices
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


class StepFactory:
    """make_train_step as an object: the placements of one mesh, read when it is made."""

    def __init__(self, on_mesh):
        self.weights_place = NamedSharding(on_mesh, P())
        self.rows_place = NamedSharding(on_mesh, P("data", None))
        self.labels_place = NamedSharding(on_mesh, P("data"))

    def __call__(self, learning_rate):
        def step(weights, features, labels):
            value, gradient = jax.value_and_grad(loss)(weights, features, labels)
            return weights - learning_rate * gradient, value, gradient

        jitted = jax.jit(step, in_shardings=(self.weights_place, self.rows_place, self.labels_place),
                         out_shardings=(self.weights_place,) * 3)
        return jitted


make_train_step = StepFactory(mesh)
train_step = make_train_step(0.1)
