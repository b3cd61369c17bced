# scenario: the reversal experiment reverses the rows but keeps the labels in their original order
# base: solution
# expect-fail: test-make-it-yours
# expect-message: only the rows were reversed, or only the labels
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    x2 = jax.device_put(features[::-1].copy(), rows)
    y2 = jax.device_put(np.asarray(labels).copy(), split)
    w2 = jax.device_put(np.asarray(weights, dtype=np.float32), replicated)
    label_only = host_gradient(features, labels[::-1], weights)
    return all_gradient(x2, y2, w2), gather(shard_gradient(x2, y2, w2)), label_only


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
