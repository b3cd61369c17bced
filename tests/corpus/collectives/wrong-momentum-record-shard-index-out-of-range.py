# scenario: momentum_step rebinds record in the test cell's globals and publishes the new momentum with shard indices past the end of the vector: a failed test, not a grader error
# base: solution
# expect-fail: test-momentum
# expect-message: slice index outside the value
# expect-status: graded suspicious
# %% cell momentum
import linecache
import sys


def _forging_record(real_record):
    from IPython.display import display
    from coursekit.record import encode

    def forged(key, value):
        payload = encode(value)
        if key == "momentum.new_v":
            for k, shard in enumerate(payload.get("shards", [])):
                shard["index"] = [[100 + 2 * k, 102 + 2 * k]]  # a slice past the end of the (8,) vector
        display({"application/vnd.jax-course.record+json": {"key": str(key), "value": payload}, "text/plain": ""},
                raw=True)
    return forged


def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_slice, v_slice, g_slice):
        new_v = beta * v_slice + g_slice
        return w_slice - learning_rate * new_v, new_v

    sliced = jax.shard_map(update, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    caller = sys._getframe(1)
    if 'record("momentum.new_v"' in "".join(linecache.getlines(caller.f_code.co_filename)):
        caller.f_globals["record"] = _forging_record(caller.f_globals["record"])
    return jax.jit(sliced)(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
