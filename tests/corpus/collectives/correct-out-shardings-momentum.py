# scenario: correct, written differently: a global-count contribution via mean, momentum jitted with out_shardings, a list comprehension timer
# base: solution
# expect-fail:
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    local_rows = features.shape[0]
    return 2 * jnp.mean(features.T * (features @ weights - labels), axis=1) * local_rows / global_count


def make_collectives(mesh, global_count):
    def gradient_program(collective, out_spec):
        def body(a, b, weights):
            return collective(local_contribution(a, b, weights, global_count))

        return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data", None), P("data"), P()), out_specs=out_spec))

    all_gradient = gradient_program(lambda t: jax.lax.psum(t, "data"), P())
    shard_gradient = gradient_program(lambda t: jax.lax.psum_scatter(t, "data", tiled=True), P("data"))
    gather = jax.jit(jax.shard_map(lambda v: jax.lax.all_gather(v, "data", tiled=True), mesh=mesh,
                                   in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    def one():
        t0 = time.perf_counter()
        fn(*args).block_until_ready()
        return (time.perf_counter() - t0) * 1_000_000

    fn(*args).block_until_ready()
    return [one() for _ in range(repeats)]
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    def update(w_all, v_all, g_all):
        new_v = beta * v_all + g_all
        return w_all - learning_rate * new_v, new_v

    return jax.jit(update, out_shardings=(split, split))(weights, velocity, gradient)
# %% cell quiz
answer = 2
