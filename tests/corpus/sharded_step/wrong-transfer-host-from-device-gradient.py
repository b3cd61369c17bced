# scenario: transfer_step's "host" update reuses the gradient the sharded step returned (np.asarray of the device gradient) instead of deriving it with host_gradient: the check is no longer independent
# base: solution
# expect-fail: test-transfer
# expect-message: host_gradient in NumPy
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, device_gradient = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    host_new_w = start.astype(np.float64) - learning_rate * np.asarray(device_gradient, dtype=np.float64)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
