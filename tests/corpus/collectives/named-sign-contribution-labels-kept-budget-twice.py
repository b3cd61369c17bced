# scenario: local_contribution's residual has its sign flipped; the label-only reversal keeps the labels in order; scatter_gather_bytes counts the all-reduce twice
# base: solution
# expect-fail: test-local-contribution test-make-it-yours test-budget
# expect-message: the sign is flipped
# expect-message: this is the gradient of the original order (or of a joint reversal)
# expect-message: scatter_gather_bytes counts the all-reduce twice
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    """One device's term of the global gradient.

    features: (n_local, d), labels: (n_local,), weights: (d,)  ->  (d,)
    Returns 2 / global_count * features^T (features @ weights - labels); global_count
    is the number of rows on all devices together, not n_local.
    """
    residual = features @ weights - labels
    return 2 * features.T @ (labels - features @ weights) / global_count


def make_collectives(mesh, global_count):
    """Return (all_gradient, shard_gradient, gather): jitted shard_map programs on axis "data".

    all_gradient(x, y, w) -> (d,), summed with psum, out_specs P()
    shard_gradient(x, y, w) -> (d,), summed with psum_scatter(tiled=True), out_specs P("data")
    gather(g) -> (d,) from a P("data") vector with all_gather(tiled=True), out_specs P(), check_vma=False
    in_specs for the gradient programs: x P("data", None), y P("data"), w P().
    """
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(
        jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False)
    )
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# Run each program once, here: a mistake in them is reported below this cell, not in a later one.
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))

# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    """Joint row-and-label reversal through both programs, and a label-only reversal.

    features: (16, d), labels: (16,), weights: (d,) host NumPy arrays.
    Returns (all_reduced, gathered, label_only):
      all_reduced: all_gradient on the jointly reversed data (JAX array, (d,))
      gathered: gather(shard_gradient(...)) on the same data (JAX array, (d,))
      label_only: host gradient with the rows kept and only the labels reversed (NumPy, (d,))
    """
    x2 = jax.device_put(features[::-1].copy(), rows)
    y2 = jax.device_put(labels[::-1].copy(), split)
    w2 = jax.device_put(np.asarray(weights, dtype=np.float32), replicated)
    all_reduced = all_gradient(x2, y2, w2)
    gathered = gather(shard_gradient(x2, y2, w2))
    label_only = host_gradient(features, labels, weights)
    return all_reduced, gathered, label_only


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)

# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    """One dict per p in rank_counts with keys "ranks", "all_reduce_bytes",
    "scatter_gather_bytes" and "shard_storage_bytes" (idealized ring, per rank)."""
    budget = []
    for ranks in rank_counts:
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        budget.append({
            "ranks": ranks,
            "all_reduce_bytes": all_reduce_bytes,
            "scatter_gather_bytes": 2 * all_reduce_bytes,
            "shard_storage_bytes": gradient_bytes / ranks,
        })
    return budget


budget = transfer_budget(2**20, [2, 4, 8])
print("MODEL, not observed traffic:")
for row in budget:
    print("  " + ", ".join(f"{key} {value:.0f}" for key, value in row.items()))
