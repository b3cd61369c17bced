# scenario: correct, written differently: untiled psum_scatter/all_gather on reshaped blocks, payloads from an integer numerator with one true division, monotonic clock
# base: solution
# expect-fail:
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    errors = jnp.dot(features, weights) - labels
    return jnp.dot(errors, features) * (2 / global_count)


def make_collectives(mesh, global_count):
    ranks = mesh.shape["data"]

    def reduce_all(a, b, w):
        return jax.lax.psum(local_contribution(a, b, w, global_count), axis_name="data")

    def reduce_shard(a, b, w):
        term = local_contribution(a, b, w, global_count)
        blocks = term.reshape(ranks, -1)
        return jax.lax.psum_scatter(blocks, axis_name="data", scatter_dimension=0)

    def gather_all(portion):
        return jax.lax.all_gather(portion, axis_name="data").reshape(-1)

    specs = dict(mesh=mesh, in_specs=(P("data", None), P("data"), P()))
    return (
        jax.jit(jax.shard_map(reduce_all, out_specs=P(), **specs)),
        jax.jit(jax.shard_map(reduce_shard, out_specs=P("data"), **specs)),
        jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False)),
    )


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    warm = fn(*args)
    warm.block_until_ready()
    samples = []
    for _ in range(repeats):
        begin = time.monotonic()
        result = fn(*args)
        result.block_until_ready()
        end = time.monotonic()
        samples.append(1e6 * (end - begin))
    return samples
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter = (ranks - 1) * gradient_bytes / ranks  # integer numerator, one true division (p need not divide G)
    return scatter, 2 * (ranks - 1) * gradient_bytes / ranks
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    @jax.jit
    def step(w_all, v_all, g_all):
        new_v = jax.lax.with_sharding_constraint(beta * v_all + g_all, split)
        return jax.lax.with_sharding_constraint(w_all - learning_rate * new_v, split), new_v

    return step(weights, velocity, gradient)
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    rows_out = []
    for p in rank_counts:
        rs, ar = ring_payload(gradient_bytes, p)
        ag = rs
        rows_out.append({"ranks": p, "all_reduce_bytes": ar, "scatter_gather_bytes": rs + ag,
                         "shard_storage_bytes": gradient_bytes / p})
    return rows_out


budget = transfer_budget(2**20, [2, 4, 8])
