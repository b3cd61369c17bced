# scenario: microbatch_partials counts the valid tokens whose error is non-zero (jnp.count_nonzero of the masked residual), not the positions where mask is True: a target predicted exactly is left out of the count; the lesson batch has no such token
# base: solution
# expect-fail: test-microbatch-partials test-accumulation
# expect-message: it counts the tokens whose error is non-zero, not the valid tokens
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    residual = jnp.where(mask, x @ w - y, 0.0)
    return 2 * jnp.einsum("st,std->d", residual, x), jnp.count_nonzero(residual)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def add_micro_batch(carry, micro_batch):
        gradient_sum, count = carry
        gradient, valid = microbatch_partials(*micro_batch, w_local)
        return (gradient_sum + gradient, count + valid), None

    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (gradient_sum, count), _ = lax.scan(add_micro_batch, start, (x, y, mask))
    return lax.psum(gradient_sum, "data") / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
