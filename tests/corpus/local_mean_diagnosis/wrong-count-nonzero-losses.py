# scenario: counts the valid tokens as the non-zero losses left after masking (np.count_nonzero of the masked losses): right while no target has a loss of exactly 0; the unseen batches have targets predicted perfectly; the mistake is written twice (in masked_token_mean and in device_sum_and_count) and charged at those two tests, and at the sharded masked mean built on device_sum_and_count (judging that program against the learner's own counts let counts charged for another reason excuse a program's own miscount: tests/attacks/local_mean_diagnosis/partials-miscount-excuses-the-programs.py)
# base: solution
# expect-fail: test-masked-mean test-device-partials test-shard-map
# expect-message: it counts the non-zero losses, not the targets
# expect-message: these count the non-zero losses, not the targets
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    kept = np.where(mask, token_losses, 0.0)
    return float(kept.sum() / np.count_nonzero(kept))


print("global masked mean:", masked_token_mean(token_losses, mask))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    kept = jnp.where(block_mask, block_losses, 0.0)
    return jnp.sum(kept), jnp.count_nonzero(kept).astype(jnp.int32)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
