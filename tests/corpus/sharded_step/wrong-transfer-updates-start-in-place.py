# scenario: transfer_step computes the host update in place on np.asarray(start), which is the caller's own array when start is a NumPy array: right values (the lesson passes lists), but a caller's start array is overwritten by the new weights; charged at its own test, which names the function and the argument
# base: solution
# expect-fail: test-transfer
# expect-message: transfer_step changed its argument start
# expect-status: graded
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start)  # no copy when start is already an array
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start.astype(np.float32), replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    start -= learning_rate * host_gradient(host_x, changed_y, start)  # in place
    return sharded_new_w, start


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
