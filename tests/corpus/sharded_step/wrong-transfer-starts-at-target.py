# scenario: transfer_step mixes up its arguments and starts both updates from true_weights instead of start
# base: solution
# expect-fail: test-transfer
# expect-message: transfer_step's sharded weights
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    begin = np.asarray(true_weights, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(begin, replicated), x, jax.device_put(changed_y, labels_sharding))
    host_new_w = begin - learning_rate * host_gradient(host_x, changed_y, begin)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
