# scenario: updates the weights with the new momentum but returns the old velocity, so the optimizer state never changes
# base: solution
# expect-fail: test-momentum
# expect-message: the new momentum
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_slice, v_slice, g_slice):
        new_v = beta * v_slice + g_slice
        return w_slice - learning_rate * new_v, v_slice

    sliced = jax.shard_map(update, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    return jax.jit(sliced)(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
