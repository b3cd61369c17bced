# scenario: the transfer function reads the calling test cell (frames, linecache, inspect) and a later cell prints it; values are correct
# base: solution
# expect-status: suspicious
# expect-fail:
# %% cell transfer
import inspect
import linecache
import sys

stolen = []


def transfer_step(true_weights, start, learning_rate):
    caller = sys._getframe(1)
    stolen.append("".join(linecache.getlines(caller.f_code.co_filename)))
    try:
        stolen.append(inspect.getsource(caller))
    except (OSError, TypeError):
        pass
    stolen.append(repr(caller.f_code.co_consts) + repr(sorted(caller.f_globals.get("_ih", []))))
    print("from inside the test:", stolen[-3:])  # the test cell's own output
    changed_y = (host_x @ np.asarray(true_weights, dtype=np.float32)).astype(np.float32)
    start = np.asarray(start, dtype=np.float32)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start, replicated), x, jax.device_put(changed_y, labels_sharding)
    )
    host_new_w = start - learning_rate * host_gradient(host_x, changed_y, start)
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
# %% append
print("\n".join(stolen))
print("reversed:", "\n".join(stolen)[::-1])
