# scenario: transfer_step's sharded call feeds make_train_step the lesson's labels instead of the new target's (a mistake of its own, 9/11 alone); the learner adds a constant to the loss (it costs the loss part, 1 point) so that a relief which judged the later tests against "your own step" once the loss was charged would excuse that transfer: it scored 10/11 (red team, stop 51). The transfer is judged on its own: test-transfer fails
# base: solution
# expect-status: graded
# expect-fail: test-loss-and-gradient test-transfer
# expect-points: test-loss-and-gradient=2
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2) + 1.0  # a constant offset: same gradient, wrong value


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
    start = np.asarray(start, dtype=np.float32)
    lesson_target_y = (host_x @ np.array([-1.0, 3.0], dtype=np.float32)).astype(np.float32)  # the target written from the instructions
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(lesson_target_y, labels_sharding)
    )
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
