# scenario: transfer_step never runs the sharded step: its "sharded" result is the NumPy host update
# base: solution
# expect-fail: test-transfer
# expect-message: did not run make_train_step
# expect-status: graded
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return host_new_w.astype(np.float32), host_new_w  # "sharded" result: a NumPy copy, no device involved


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
