# scenario: hard-codes four devices: momentum_step builds its own mesh of jax.devices()[:4]
# base: solution
# expect-fail: test-momentum
# expect-message: momentum_step did not run there
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    four = Mesh(np.array(jax.devices()[:4]), ("data",))

    def update(w_slice, v_slice, g_slice):
        new_v = beta * v_slice + g_slice
        return w_slice - learning_rate * new_v, new_v

    sliced = jax.shard_map(update, mesh=four, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    return jax.jit(sliced)(weights, velocity, gradient)
