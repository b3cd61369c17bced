# scenario: gradient accumulation as it shipped in real trainers: each micro-batch's gradient divided by that micro-batch's own count of valid tokens, the M results averaged
# base: solution
# expect-fail: test-accumulation
# expect-message: it is the mean of micro-batch means: each micro-batch's gradient was divided by its own count
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def add_micro_batch(total, micro_batch):
        gradient, valid = microbatch_partials(*micro_batch, w_local)
        count = lax.psum(valid, "data")
        return total + lax.psum(gradient, "data") / jnp.maximum(count, 1), None

    total, _ = lax.scan(add_micro_batch, jnp.zeros_like(w), (x, y, mask))
    return total / x.shape[0]


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
