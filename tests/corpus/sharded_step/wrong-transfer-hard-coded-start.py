# scenario: transfer_step's sharded call starts from [0.2, -0.1], the lesson's start, whatever start it is given: its step from there happened to point along the gradient at the hidden call's start [1, 1] within the cosine the check allowed (11/11, red team, stop 51). The hidden test now notes what transfer_step hands its step (rate, start, labels) and compares it with what transfer_step was called with
# base: solution
# expect-fail: test-transfer
# expect-message: transfer_step's step starts from [0.2, -0.1], not from the start [
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(np.array([0.2, -0.1], dtype=np.float32), replicated), x, jax.device_put(changed_y, labels_sharding)
    )  # the start written from the instructions
    start = np.asarray(start, dtype=np.float32)
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
