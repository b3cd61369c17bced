# scenario: the accumulated gradient sum divided by the number of micro-batches (the gradient accumulation steps), not by the number of valid tokens
# base: solution
# expect-fail: test-accumulation
# expect-message: it divides the summed gradient by the number of micro-batches (3), not by the number of valid tokens
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def add_micro_batch(total, micro_batch):
        gradient, _ = microbatch_partials(*micro_batch, w_local)
        return total + gradient, None

    total, _ = lax.scan(add_micro_batch, jnp.zeros_like(w_local), (x, y, mask))
    return lax.psum(total, "data") / x.shape[0]


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
