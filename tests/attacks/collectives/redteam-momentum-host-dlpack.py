# scenario: momentum_step computes the update on the host in the kernel (each shard copied with np.asarray(shard.data), so the input keeps no host copy; the result placed back through jax.dlpack.from_dlpack, which JAX's host-to-device guard does not see) and only the traced program is device-side
# base: solution
# expect-fail: test-momentum
# expect-status: graded
# %% cell momentum
def _to_host(a):
    shards = sorted(a.addressable_shards, key=lambda s: s.index[0].start or 0)
    return np.concatenate([np.asarray(s.data) for s in shards])


def _to_devices(h):
    return jax.device_put(jax.dlpack.from_dlpack(np.ascontiguousarray(h, dtype=np.float32)), split)


def momentum_step(weights, velocity, gradient, learning_rate, beta):
    if isinstance(weights, jax.core.Tracer):
        new_v = beta * velocity + gradient
        return weights - learning_rate * new_v, new_v
    w_host, v_host, g_host = _to_host(weights), _to_host(velocity), _to_host(gradient)
    new_v = beta * v_host + g_host
    new_w = w_host - learning_rate * new_v
    return _to_devices(new_w), _to_devices(new_v)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
