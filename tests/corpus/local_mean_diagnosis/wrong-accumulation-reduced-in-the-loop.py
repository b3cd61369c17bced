# scenario: the right numbers, but jax.grad with respect to the replicated w inside the scan sums each micro-batch's gradient over the devices, and the count is psummed in the loop too: one all-reduce per micro-batch
# base: solution
# expect-fail: test-accumulation
# expect-message: the program reduces across devices inside its loop over micro-batches, once per micro-batch
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    def add_micro_batch(carry, micro_batch):
        gradient, valid = microbatch_partials(*micro_batch, w)
        return (carry[0] + gradient, carry[1] + lax.psum(valid, "data")), None

    (total, count), _ = lax.scan(add_micro_batch, (jnp.zeros_like(w), jnp.zeros((), jnp.int32)), (x, y, mask))
    return total / count


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
