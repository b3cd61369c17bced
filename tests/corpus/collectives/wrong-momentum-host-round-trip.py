# scenario: momentum_step copies the partitioned state to the host with jax.device_get, updates it with NumPy arithmetic and places it back with jax.device_put: right values and layout, and under jit device_get hands back the tracers, so the exported program is a device-side update, yet every call in the kernel gathers the whole state on the host
# base: solution
# expect-fail: test-momentum
# expect-message: momentum_step moves the partitioned state through the host
# expect-status: graded
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    w_host, v_host, g_host = jax.device_get((weights, velocity, gradient))  # the whole state, on the host
    new_v = beta * v_host + g_host
    new_w = w_host - learning_rate * new_v
    return jax.device_put(new_w, split), jax.device_put(new_v, split)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
