# scenario: the transfer step reuses the lesson's labels y on the devices instead of the new target's labels
# base: solution
# expect-fail: test-transfer
# expect-message: it uses the lesson's labels y
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(jax.device_put(start, replicated), x, y)
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
