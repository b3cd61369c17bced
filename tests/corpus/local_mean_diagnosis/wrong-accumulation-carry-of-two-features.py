# scenario: the scan's carry starts as a gradient of fixed width 2 (the lesson's two features), jnp.zeros(2), not jnp.zeros_like(w_local): right on every batch of 2 features, a batch of 3 makes the scan's body return a carry of another shape
# base: solution
# expect-fail: test-accumulation
# expect-message: feature(s), on a mesh of
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

    start = (lax.pcast(jnp.zeros(2, jnp.float32), "data", to="varying"),
             lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (gradient_sum, count), _ = lax.scan(add_micro_batch, start, (x, y, mask))
    return lax.psum(gradient_sum, "data") / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
