# scenario: make_sharded_masked_mean's function copies the placed losses and mask to the host with jax.device_get and places them back before its shard_map program runs: right values, and under jit device_get hands back the tracers, so the exported program is the psum program, yet every call in the kernel gathers the whole batch on the host
# base: solution
# expect-fail: test-shard-map
# expect-message: your sharded masked mean moves the placed batch through the host
# expect-status: graded
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    program = jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P())
    placed = NamedSharding(mesh, P("data", None))

    def masked_mean(token_losses, mask):
        host_losses, host_mask = jax.device_get((token_losses, mask))  # the whole batch, on the host
        return program(jax.device_put(host_losses, placed), jax.device_put(host_mask, placed))

    return masked_mean  # a plain Python function: each call runs eagerly


sharded_masked_mean = make_sharded_masked_mean(mesh)
