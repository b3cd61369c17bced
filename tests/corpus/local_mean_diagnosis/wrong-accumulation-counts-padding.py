# scenario: microbatch_partials counts every token position of its block (padding included) as a valid token
# base: solution
# expect-fail: test-microbatch-partials test-accumulation
# expect-message: padding positions were counted: count only the positions where mask is True
# expect-message: it divides by every token position: padding positions were counted
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), mask.size


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def add_micro_batch(carry, micro_batch):
        gradient, valid = microbatch_partials(*micro_batch, w_local)
        return (carry[0] + gradient, carry[1] + valid), None

    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (total, count), _ = lax.scan(add_micro_batch, start, (x, y, mask))
    return lax.psum(total, "data") / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
