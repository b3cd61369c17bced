# scenario: the accumulation written as a Python loop of a literal 3 iterations (the lesson batch has 3 micro-batches), adding gradient sums and counts locally and psumming once after the loop: right on every batch of 3 micro-batches, it leaves out the rest of a longer one (and cannot index a shorter one)
# base: solution
# expect-fail: test-accumulation
# expect-message: it is the gradient of the first 3 micro-batches of
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")
    gradient_sum = jnp.zeros_like(w_local)
    count = lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying")
    for m in range(3):  # the three micro-batches
        gradient, valid = microbatch_partials(x[m], y[m], mask[m], w_local)
        gradient_sum, count = gradient_sum + gradient, count + valid
    return lax.psum(gradient_sum, "data") / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
