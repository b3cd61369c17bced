# scenario: the reversal experiment returns shard_gradient's split result as "gathered" without running gather: right values, still 8/p per device
# base: solution
# expect-fail: test-make-it-yours
# expect-message: every device should hold all
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    x2 = jax.device_put(features[::-1].copy(), rows)
    y2 = jax.device_put(labels[::-1].copy(), split)
    w2 = jax.device_put(np.asarray(weights, dtype=np.float32), replicated)
    all_reduced = all_gradient(x2, y2, w2)
    gathered = shard_gradient(x2, y2, w2)
    label_only = host_gradient(features, labels[::-1], weights)
    return all_reduced, gathered, label_only


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
