# scenario: correct, written differently: einsum contribution, jax.block_until_ready timer in nanoseconds, payload as G - G/p (true division: p need not divide G), momentum as plain array arithmetic
# base: solution
# expect-fail:
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    scale = 2.0 / global_count
    return scale * jnp.einsum("nd,n->d", features, jnp.einsum("nd,d->n", features, weights) - labels)


def make_collectives(mesh, global_count):
    data_specs = (P("data", None), P("data"), P())
    programs = []
    for collective, out_spec in [
        (lambda g: jax.lax.psum(g, "data"), P()),
        (lambda g: jax.lax.psum_scatter(g, "data", scatter_dimension=0, tiled=True), P("data")),
    ]:
        body = lambda a, b, w, collective=collective: collective(local_contribution(a, b, w, global_count))
        programs.append(jax.jit(jax.shard_map(body, mesh=mesh, in_specs=data_specs, out_specs=out_spec)))
    programs.append(jax.jit(jax.shard_map(
        lambda g: jax.lax.all_gather(g, "data", axis=0, tiled=True),
        mesh=mesh, in_specs=(P("data"),), out_specs=P(), check_vma=False)))
    return tuple(programs)


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    jax.block_until_ready(fn(*args))
    out = []
    while len(out) < repeats:
        t0 = time.perf_counter_ns()
        jax.block_until_ready(fn(*args))
        out.append((time.perf_counter_ns() - t0) / 1000.0)
    return out
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    chunk = gradient_bytes / ranks
    reduce_scatter = gradient_bytes - chunk
    return reduce_scatter, reduce_scatter + reduce_scatter
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    velocity = beta * velocity + gradient
    return weights - learning_rate * velocity, velocity
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    flipped_x = jax.device_put(np.flip(features, axis=0).copy(), rows)
    flipped_y = jax.device_put(np.flip(labels).copy(), split)
    placed_w = jax.device_put(weights.astype(np.float32), replicated)
    return (all_gradient(flipped_x, flipped_y, placed_w),
            gather(shard_gradient(flipped_x, flipped_y, placed_w)),
            host_gradient(features, np.flip(labels), weights))


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    return [
        dict(ranks=p,
             all_reduce_bytes=ring_payload(gradient_bytes, p)[1],
             scatter_gather_bytes=sum([ring_payload(gradient_bytes, p)[0]] * 2),
             shard_storage_bytes=gradient_bytes / p)
        for p in rank_counts
    ]


budget = transfer_budget(2**20, [2, 4, 8])
print(budget)
# %% cell quiz
answer = 2
