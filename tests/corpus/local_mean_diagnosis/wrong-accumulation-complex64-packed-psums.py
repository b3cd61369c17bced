# scenario: the right numbers, but a Python loop over the micro-batches psums each one's gradient, two float32 packed into one complex64 element (half the elements, the same bytes), and the count once after it: one all-reduce per micro-batch that no loop of the program shows
# base: solution
# expect-fail: test-accumulation
# expect-message: and there are more than two of them
# %% cell accumulation
def microbatch_partials(x, y, mask, w):
    def summed_loss(w):
        return jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0))

    return jax.grad(summed_loss)(w), jnp.sum(mask)


def accumulation_program(x, y, mask, w):
    w_local = lax.pcast(w, "data", to="varying")
    total, count = jnp.zeros_like(w), 0
    for m in range(x.shape[0]):
        gradient, valid = microbatch_partials(x[m], y[m], mask[m], w_local)
        packed = lax.psum(lax.complex(gradient[0::2], gradient[1::2]), "data")
        total = total + jnp.stack([jnp.real(packed), jnp.imag(packed)], axis=-1).reshape(-1)
        count = count + valid
    return total / lax.psum(count, "data")


def make_accumulated_gradient(mesh):
    return jax.jit(jax.shard_map(accumulation_program, mesh=mesh, in_specs=ACC_SPECS, out_specs=P()))


accumulated_gradient = make_accumulated_gradient(mesh)
print("sums and counts, one division:", np.asarray(accumulated_gradient(*placed_batch)))
