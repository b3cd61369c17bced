# scenario: the scan stacks every micro-batch's gradient sum and count as its outputs, and one psum after the loop reduces the stacked (M, d) and (M,) partials, summed over the micro-batches afterwards: the right numbers and no collective in the loop, but the psum carries M gradients, the bytes of a psum per micro-batch, where the lesson psums one gradient sum and one count
# base: solution
# expect-fail: test-accumulation
# expect-message: it reduces once, after the loop, but its psum carries more than the gradient sum and its count
# expect-no-message: a Python loop of psums
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def partials(_, micro_batch):
        return None, microbatch_partials(*micro_batch, w_local)

    _, (gradient_sums, counts) = lax.scan(partials, None, (x, y, mask))
    gradient_sums, counts = lax.psum((gradient_sums, counts), "data")  # once, after the loop
    return gradient_sums.sum(axis=0) / counts.sum()


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
