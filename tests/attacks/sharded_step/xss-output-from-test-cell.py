# scenario: the transfer function, called by the test cell, displays HTML with script in the test cell's output; values are correct
# base: solution
# expect-status: graded
# expect-fail:
# %% cell transfer
from IPython.display import HTML, display


def transfer_step(true_weights, start, learning_rate):
    display(HTML("<script>top.__pwned = 'test-cell'</script><img src=x onerror=\"top.__pwned = 'img'\">"))
    display({"application/javascript": "top.__pwned = 'js'", "text/plain": "transfer"}, raw=True)
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
