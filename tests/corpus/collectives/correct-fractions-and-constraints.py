# scenario: correct, written differently: axis_name keywords, exact Fraction payloads, momentum by sharding constraints, np.flip reversal
# base: solution
# expect-fail:
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    return jnp.matmul(jnp.matmul(features, weights) - labels, features) * 2.0 / global_count


def make_collectives(mesh, global_count):
    gradient_specs = dict(mesh=mesh, in_specs=(P("data", None), P("data"), P()))

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), axis_name="data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), axis_name="data",
                                    scatter_dimension=0, tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, axis_name="data", axis=0, tiled=True)

    return (jax.jit(jax.shard_map(reduce_all, out_specs=P(), **gradient_specs)),
            jax.jit(jax.shard_map(reduce_shard, out_specs=P("data"), **gradient_specs)),
            jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=(P("data"),), out_specs=P(), check_vma=False)))


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(repeats):
        begin = time.perf_counter_ns()
        jax.block_until_ready(fn(*args))
        samples.append((time.perf_counter_ns() - begin) / 1e3)
    return samples
# %% cell payload
from fractions import Fraction


def ring_payload(gradient_bytes, ranks):
    scatter = Fraction(ranks - 1, ranks) * gradient_bytes
    return float(scatter), float(2 * scatter)
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    @jax.jit
    def update(w_all, v_all, g_all):
        new_v = jax.lax.with_sharding_constraint(beta * v_all + g_all, NamedSharding(mesh, P("data")))
        return jax.lax.with_sharding_constraint(w_all - learning_rate * new_v, NamedSharding(mesh, P("data"))), new_v

    return update(weights, velocity, gradient)
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    flipped = (jax.device_put(np.flip(features, 0).copy(), rows), jax.device_put(np.flip(labels).copy(), split),
               jax.device_put(np.float32(weights), replicated))
    return all_gradient(*flipped), gather(shard_gradient(*flipped)), host_gradient(features, np.flip(labels), weights)


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    out = []
    for p in rank_counts:
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, p)
        out.append(dict(ranks=p, all_reduce_bytes=all_reduce_bytes, scatter_gather_bytes=2 * scatter_bytes,
                        shard_storage_bytes=gradient_bytes / p))
    return out


budget = transfer_budget(2**20, [2, 4, 8])
