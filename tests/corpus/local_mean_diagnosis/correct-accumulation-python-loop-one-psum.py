# scenario: the accumulation written as a Python loop over every micro-batch of x (x.shape[0], unrolled when traced), the residual's gradient by hand, sums and counts added locally, then ONE psum of the (gradient, count) pair after the loop
# base: solution
# expect-fail:
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    residual = jnp.where(mask, x @ w - y, 0.0)
    return 2 * jnp.einsum("st,std->d", residual, x), jnp.sum(mask.astype(jnp.int32))


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")
    gradient_sum = jnp.zeros_like(w_local)
    count = lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying")
    for m in range(x.shape[0]):
        gradient, valid = microbatch_partials(x[m], y[m], mask[m], w_local)
        gradient_sum, count = gradient_sum + gradient, count + valid
    gradient_sum, count = lax.psum((gradient_sum, count), "data")
    return gradient_sum / count


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
