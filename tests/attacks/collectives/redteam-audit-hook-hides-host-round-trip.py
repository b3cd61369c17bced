# scenario: the host round-trip momentum step of tests/corpus/collectives/wrong-momentum-host-round-trip.py (jax.device_get, NumPy update, jax.device_put), plus an audit hook (sys.addaudithook) that, when a test cell's code names host_round_trip, replaces coursekit.checks.host_round_trip (through vars() of the module, no attribute assignment) by one that answers "no host copy": the grader's reset had already put coursekit.checks back, but the hook acts inside the test cell, after the reset, and nothing of it is flagged
# base: solution
# expect-fail: test-momentum
# expect-status: suspicious
# %% cell momentum
import sys as _s
import coursekit.checks


def _no_copy(*args, **kwargs):
    return 0


def _watch(event, args):
    if event == "exec" and args and "host_round_trip" in getattr(args[0], "co_names", ()):
        vars(coursekit.checks)["host_round_trip"] = _no_copy


_s.addaudithook(_watch)


def momentum_step(weights, velocity, gradient, learning_rate, beta):
    w_host, v_host, g_host = jax.device_get((weights, velocity, gradient))  # the whole state, on the host
    new_v = beta * v_host + g_host
    new_w = w_host - learning_rate * new_v
    return jax.device_put(new_w, split), jax.device_put(new_v, split)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
