# scenario: the transfer's "host" result is a NumPy copy of the sharded result, not a host derivation
# base: solution
# expect-fail: test-transfer
# expect-message: it is a copy of the sharded result
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    host_new_w = np.asarray(sharded_new_w, dtype=np.float64)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
print("sharded:", np.asarray(transfer_w), " host:", transfer_reference)
