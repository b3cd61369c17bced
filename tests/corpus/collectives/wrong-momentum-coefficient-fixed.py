# scenario: momentum_step ignores its beta argument and uses the lesson's 0.9: right on the visible check (beta 0.9), wrong on every hidden call with another coefficient; the feedback must say so, not only that a smaller mesh differs
# base: solution
# expect-fail: test-momentum
# expect-message: the coefficient 0.9
# expect-message: not the beta it is given
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_slice, v_slice, g_slice):
        new_v = 0.9 * v_slice + g_slice
        return w_slice - learning_rate * new_v, new_v

    sliced = jax.shard_map(update, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    return jax.jit(sliced)(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
