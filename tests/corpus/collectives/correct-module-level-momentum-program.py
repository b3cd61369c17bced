# scenario: correct, written differently: the partitioned momentum program built once at module level on the notebook's mesh (a jitted shard_map taking the rate and coefficient as arguments), momentum_step a thin call of it; nothing assumes four devices, so the smaller mesh must rebuild it from the learner's cell rather than rebind names it never reads again
# base: solution
# expect-fail:
# %% cell momentum
def _momentum_slices(w_slice, v_slice, g_slice, rate, coefficient):
    new_v = coefficient * v_slice + g_slice
    return w_slice - rate * new_v, new_v


SLICED_MOMENTUM = jax.jit(jax.shard_map(_momentum_slices, mesh=mesh, in_specs=(P("data"),) * 3 + (P(), P()),
                                        out_specs=(P("data"), P("data"))))


def momentum_step(weights, velocity, gradient, learning_rate, beta):
    return SLICED_MOMENTUM(weights, velocity, gradient, learning_rate, beta)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
