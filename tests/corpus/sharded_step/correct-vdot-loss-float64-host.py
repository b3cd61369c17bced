# scenario: correct, written differently: the loss as vdot(r, r) / labels.size, the step returning a tuple built by jax.tree.map over one replicated sharding, and the host transfer in float64 throughout
# base: solution
# expect-fail:
# %% cell train-step
def loss(weights, features, labels):
    residual = jnp.dot(features, weights) - labels
    return jnp.vdot(residual, residual) / labels.size


def make_train_step(learning_rate):
    grad_fn = jax.value_and_grad(loss)

    def step(weights, features, labels):
        value, gradient = grad_fn(weights, features, labels)
        new_weights = jax.tree.map(lambda p, g: p - learning_rate * g, weights, gradient)
        return new_weights, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding), out_shardings=replicated)


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    target = np.asarray(true_weights, dtype=np.float64)
    begin = np.asarray(start, dtype=np.float64)
    labels = host_x.astype(np.float64) @ target
    step = make_train_step(learning_rate)
    sharded_new_w, _, _ = step(jax.device_put(begin.astype(np.float32), replicated), x,
                               jax.device_put(labels.astype(np.float32), labels_sharding))
    return sharded_new_w, begin - learning_rate * host_gradient(host_x, labels, begin)


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
