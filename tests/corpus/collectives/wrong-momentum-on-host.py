# scenario: momentum_step gathers the partitioned state to the host, updates it in NumPy and places it back with the input's sharding: right values and layout, nothing computed on the devices (the call copies the state to the host; the export fails too, on weights.sharding and NumPy on traced values)
# base: solution
# expect-fail: test-momentum
# expect-message: momentum_step moves the partitioned state through the host
# expect-status: graded
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    placement = weights.sharding  # P("data") on whatever mesh the caller used
    w_host, v_host, g_host = (np.asarray(a) for a in (weights, velocity, gradient))  # gathers everything
    new_v = beta * v_host + g_host
    new_w = w_host - learning_rate * new_v
    return jax.device_put(new_w, placement), jax.device_put(new_v, placement)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
