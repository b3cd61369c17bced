# scenario: jax.grad with respect to the replicated w (already summed over the devices), then psum of the gradient sum after the scan: the gradient is summed over the devices twice
# base: solution
# expect-fail: test-accumulation
# expect-message: times too large: the gradient was summed over the devices twice: jax.grad with respect to the replicated w already psums it
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    def add_micro_batch(carry, micro_batch):
        gradient, valid = microbatch_partials(*micro_batch, w)
        return (carry[0] + gradient, carry[1] + valid), None

    start = (jnp.zeros_like(w), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (total, count), _ = lax.scan(add_micro_batch, start, (x, y, mask))
    return lax.psum(lax.pcast(total, "data", to="varying"), "data") / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
