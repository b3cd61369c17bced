# scenario: correct, written differently: the gradient through jax.vjp, the update with jax.tree.map, the host update from lists
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    errors = jnp.einsum("nd,d->n", features, weights) - labels
    return jnp.mean(errors**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, pullback = jax.vjp(lambda v: loss(v, features, labels), weights)
        (gradient,) = pullback(jnp.ones_like(value))
        new_weights = jax.tree.map(lambda v, g: v - learning_rate * g, weights, gradient)
        return new_weights, value, gradient

    shardings = dict(in_shardings=(replicated, rows, labels_sharding),
                     out_shardings=(replicated, replicated, replicated))
    return jax.jit(step, **shardings)


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    new_labels = [float(row @ np.asarray(true_weights)) for row in host_x.astype(np.float64)]
    host_new_w = np.array(start, dtype=np.float64) - learning_rate * host_gradient(
        host_x, np.array(new_labels), np.array(start, dtype=np.float64))
    device_step = make_train_step(learning_rate)
    sharded_new_w = device_step(jnp.asarray(start, dtype=jnp.float32), x,
                                jnp.asarray(new_labels, dtype=jnp.float32))[0]
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
