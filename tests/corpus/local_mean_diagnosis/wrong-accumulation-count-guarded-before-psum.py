# scenario: each device's count is guarded against zero before the psum (lax.psum(jnp.maximum(count, 1))), so a device without a valid token in the whole step adds 1 to the global count; every batch with a valid token on each device gives the right gradient
# base: solution
# expect-fail: test-accumulation
# expect-message: one for each device without a valid token in the whole step: a device's count was guarded against zero
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def add_micro_batch(carry, micro_batch):
        gradient_sum, count = carry
        gradient, valid = microbatch_partials(*micro_batch, w_local)
        return (gradient_sum + gradient, count + valid), None

    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (gradient_sum, count), _ = lax.scan(add_micro_batch, start, (x, y, mask))
    return lax.psum(gradient_sum, "data") / lax.psum(jnp.maximum(count, 1), "data")  # never divide by zero


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
