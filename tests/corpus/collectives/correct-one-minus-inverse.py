# scenario: correct, written differently: payloads as (1 - 1/p) G, the budget's scatter-gather written as 2 (p - 1)/p G directly, a perf_counter_ns timer divided by 1000, momentum returning a dict-free tuple from a named inner function
# base: solution
# expect-fail:
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        jax.block_until_ready(fn(*args))
        samples.append((time.perf_counter_ns() - t0) / 1000.0)
    return samples
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    share = 1.0 - 1.0 / ranks
    return share * gradient_bytes, 2.0 * share * gradient_bytes
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    return [{"ranks": p, "all_reduce_bytes": ring_payload(gradient_bytes, p)[1],
             "scatter_gather_bytes": 2 * (p - 1) / p * gradient_bytes, "shard_storage_bytes": gradient_bytes / p}
            for p in rank_counts]


budget = transfer_budget(2**20, [2, 4, 8])
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    @jax.jit
    @jax.shard_map(mesh=mesh, in_specs=(P("data"), P("data"), P("data")), out_specs=(P("data"), P("data")))
    def per_device(w_part, v_part, g_part):
        v_next = g_part + beta * v_part
        return w_part - learning_rate * v_next, v_next

    return per_device(weights, velocity, gradient)


first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
