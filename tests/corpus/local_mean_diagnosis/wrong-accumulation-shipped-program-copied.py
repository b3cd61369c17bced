# scenario: the accumulation program is the lesson's shipped one, copied: each device's micro-batch means added, divided by M, and pmean over the devices
# base: solution
# expect-fail: test-accumulation
# expect-message: it is the mean of micro-batch means, averaged over the devices (the accumulation as it shipped)
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    return shipped_program(x, y, mask, w)


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
