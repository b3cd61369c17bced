# scenario: momentum_step places its results with weights.sharding: right for any mesh when called on placed arrays, but the lesson asks for a step that jax.jit can trace (the grader exports it), and a traced value has no .sharding; the message says so, not that NumPy ran on traced values
# base: solution
# expect-fail: test-momentum
# expect-message: weights.sharding is not available on a traced value
# expect-status: graded
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    placement = weights.sharding  # P("data") on whatever mesh the caller used
    new_v = beta * velocity + gradient
    new_w = weights - learning_rate * new_v
    return jax.device_put(new_w, placement), jax.device_put(new_v, placement)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
