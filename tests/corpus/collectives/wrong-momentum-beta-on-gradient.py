# scenario: puts beta on the gradient instead of on the old momentum: v' = v + beta g
# base: solution
# expect-fail: test-momentum
# expect-message: beta multiplies the gradient instead of the old momentum
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_slice, v_slice, g_slice):
        new_v = v_slice + beta * g_slice
        return w_slice - learning_rate * new_v, new_v

    sliced = jax.shard_map(update, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    return jax.jit(sliced)(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
