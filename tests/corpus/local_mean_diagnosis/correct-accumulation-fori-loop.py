# scenario: the accumulation written with lax.fori_loop over micro-batch indices, the residual's gradient by hand, and one psum of a (gradient, count) pair after the loop
# base: solution
# expect-fail:
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    residual = jnp.where(mask, x @ w - y, 0.0)
    return 2 * jnp.einsum("st,std->d", residual, x), jnp.count_nonzero(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")

    def body(m, carry):
        g, c = microbatch_partials(x[m], y[m], mask[m], w_local)
        return carry[0] + g, carry[1] + c

    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    total, count = lax.fori_loop(0, x.shape[0], body, start)
    total, count = lax.psum((total, count), "data")
    return total / count


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
