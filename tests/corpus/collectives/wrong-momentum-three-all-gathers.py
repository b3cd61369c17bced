# scenario: the momentum step constrains weights, momentum and gradient to replicated inside its jitted program, updates the whole vectors and constrains the results back to split: its outputs stay split and its values are right, but its compiled program has three all-gathers (the correct step has none): the state does not stay where it is
# base: solution
# expect-fail: test-momentum
# expect-message: keep weights, momentum and gradient split
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_all, v_all, g_all):
        w_all, v_all, g_all = (jax.lax.with_sharding_constraint(a, replicated) for a in (w_all, v_all, g_all))
        new_v = beta * v_all + g_all
        new_w = w_all - learning_rate * new_v
        return jax.lax.with_sharding_constraint(new_w, split), jax.lax.with_sharding_constraint(new_v, split)

    return jax.jit(update)(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
