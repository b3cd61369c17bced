# scenario: wrong-global-jit-not-shard-map (a masked jnp.sum over the global arrays under one jit) plus a decorative shard_map whose psum is multiplied by 0 before it reaches the result
# variant-of: wrong-global-jit-not-shard-map.py
# base: solution
# expect-fail: test-shard-map
# expect-message: should psum over the devices inside jax.shard_map
# expect-status: graded
# test-shard-map) plus a decorative shard_map whose psum is multiplied by 0: the structural check passes
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.where(block_mask, block_losses, 0).sum(), jnp.count_nonzero(block_mask)


def make_sharded_masked_mean(mesh):
    rows = NamedSharding(mesh, P("data", None))

    def global_masked_mean(token_losses, mask):
        return jnp.sum(jnp.where(mask, token_losses, 0.0)) / jnp.sum(mask)

    # Decoration only: a shard_map whose psum is multiplied by zero before it touches the result.
    decoration = jax.shard_map(lambda block: lax.psum(jnp.sum(block) * 0.0, "data"), mesh=mesh,
                               in_specs=P("data", None), out_specs=P())

    def decorated(token_losses, mask):
        return global_masked_mean(token_losses, mask) + decoration(token_losses)

    return jax.jit(decorated, in_shardings=(rows, rows), out_shardings=NamedSharding(mesh, P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
