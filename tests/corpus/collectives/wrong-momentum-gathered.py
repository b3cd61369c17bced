# scenario: gathers weights, momentum and gradient and updates the full vectors: right values, momentum no longer partitioned
# base: solution
# expect-fail: test-momentum
# expect-message: the momentum is no longer partitioned
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    full_w, full_v, full_g = gather(weights), gather(velocity), gather(gradient)
    new_v = beta * full_v + full_g
    return full_w - learning_rate * new_v, new_v
