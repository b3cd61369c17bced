# scenario: a "step" that computes everything on the host with NumPy (the notebook's own host_gradient formula) and places the results replicated on the devices of whatever mesh its arguments use: every value the kernel records is right, on every mesh, but no sharded JAX program exists
# base: solution
# expect-fail: test-loss-and-gradient test-update test-placement
# expect-message: JAX could not export it
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        x, y = np.asarray(features, dtype=np.float64), np.asarray(labels, dtype=np.float64)
        w = np.asarray(weights, dtype=np.float64)
        residual = x @ w - y
        g = 2 * x.T @ residual / len(y)
        everywhere = NamedSharding(features.sharding.mesh, P())
        return tuple(jax.device_put(np.asarray(v, dtype=np.float32), everywhere)
                     for v in (w - learning_rate * g, np.mean(residual**2), g))

    return step


train_step = make_train_step(0.1)
