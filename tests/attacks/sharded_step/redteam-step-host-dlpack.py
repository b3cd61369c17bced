# scenario: the training step computes the loss and gradient with NumPy on the host in every kernel call (the inputs read shard by shard with np.asarray(shard.data), so no input keeps a host copy; the results placed back through jax.dlpack.from_dlpack and a device-to-device jax.device_put, which JAX's host-to-device guard does not see); only when traced does it run the device program, so the exported program is right and the kernel's host-transfer check sees nothing
# base: solution
# expect-fail: test-placement
# expect-status: graded
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def _to_host(a):
    if a.sharding.is_fully_replicated:
        return np.asarray(a.addressable_shards[0].data)
    shards = {s.index[0].start or 0: np.asarray(s.data) for s in a.addressable_shards}
    return np.concatenate([shards[k] for k in sorted(shards)])


def _to_devices(h, like):
    return jax.device_put(jax.dlpack.from_dlpack(np.array(h, dtype=np.float32, order="C")), like.sharding)


def make_train_step(learning_rate):
    def device_step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    jitted = jax.jit(device_step, in_shardings=(replicated, rows, labels_sharding),
                     out_shardings=(replicated, replicated, replicated))

    def step(weights, features, labels):
        if any(isinstance(a, jax.core.Tracer) for a in (weights, features, labels)) or not all(
                isinstance(a, jax.Array) for a in (weights, features, labels)):
            return jitted(weights, features, labels)
        w_host, x_host, y_host = (_to_host(a).astype(np.float64) for a in (weights, features, labels))
        residual = x_host @ w_host - y_host
        value = np.mean(residual**2)
        gradient = 2 * x_host.T @ residual / len(y_host)
        return tuple(_to_devices(v, weights) for v in (w_host - learning_rate * gradient, np.reshape(value, ()), gradient))

    step.lower = jitted.lower
    step.trace = jitted.trace
    return step


train_step = make_train_step(0.1)
