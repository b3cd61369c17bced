# scenario: the joint reversal passes the original order to both programs (the gradient is a sum over rows, so its value cannot tell)
# base: solution
# expect-fail: test-make-it-yours
# expect-message: are in their original order
# expect-status: graded
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    x2 = jax.device_put(np.asarray(features), rows)          # NOT reversed
    y2 = jax.device_put(np.asarray(labels), split)           # NOT reversed
    w2 = jax.device_put(np.asarray(weights, dtype=np.float32), replicated)
    all_reduced = all_gradient(x2, y2, w2)
    gathered = gather(shard_gradient(x2, y2, w2))
    label_only = host_gradient(features, labels[::-1], weights)
    return all_reduced, gathered, label_only


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
