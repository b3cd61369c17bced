# scenario: correct, written differently: timeit.default_timer, the label-only reversal written as rows reversed with labels kept (the same gradient: X^T(Xw - y) is a sum over rows), scatter_gather_bytes equal to the all-reduce payload
# base: solution
# expect-fail:
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    import timeit

    clock = timeit.default_timer
    jax.block_until_ready(fn(*args))
    samples = []
    while len(samples) < repeats:
        began = clock()
        fn(*args).block_until_ready()
        samples.append(1e6 * (clock() - began))
    return samples
# %% cell make-it-yours
def reversal_experiment(features, labels, weights):
    order = np.arange(len(labels))[::-1]
    placed = (jax.device_put(features[order], rows), jax.device_put(labels[order], split),
              jax.device_put(np.float32(1) * weights, replicated))
    return all_gradient(*placed), gather(shard_gradient(*placed)), host_gradient(features[order], labels, weights)


changed_w = host_w + np.float32(0.17)
joint_all, joint_gathered, label_only = reversal_experiment(host_x, host_y, changed_w)
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    rows_ = []
    for ranks in rank_counts:
        _, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        rows_.append(dict(ranks=ranks, all_reduce_bytes=all_reduce_bytes, scatter_gather_bytes=all_reduce_bytes,
                          shard_storage_bytes=gradient_bytes / ranks))
    return rows_


budget = transfer_budget(2**20, [2, 4, 8])
