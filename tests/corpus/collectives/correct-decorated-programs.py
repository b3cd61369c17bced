# scenario: correct, written differently: decorator-style shard_map programs, mean-based contribution, a helper-based timer
# base: solution
# expect-fail:
# %% cell collectives
from functools import partial


def local_contribution(features, labels, weights, global_count):
    n_local = features.shape[0]
    local_mean_gradient = 2 * jnp.mean(features * (features @ weights - labels)[:, None], axis=0)
    return local_mean_gradient * (n_local / global_count)


def make_collectives(mesh, global_count):
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("data", None), P("data"), P()), out_specs=P())
    def all_gradient(a, b, w):
        return jax.lax.psum(local_contribution(a, b, w, global_count), "data")

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("data", None), P("data"), P()), out_specs=P("data"))
    def shard_gradient(a, b, w):
        return jax.lax.psum_scatter(local_contribution(a, b, w, global_count), "data", tiled=True)

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False)
    def gather(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# %% cell timing
from time import perf_counter


def _one_completed_call(fn, args):
    t = perf_counter()
    fn(*args).block_until_ready()
    return perf_counter() - t


def completed_samples(fn, *args, repeats=7):
    _one_completed_call(fn, args)
    return [1e6 * _one_completed_call(fn, args) for _ in range(repeats)]
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    fraction = 1 - 1 / ranks
    return fraction * gradient_bytes, 2 * fraction * gradient_bytes
# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    update = jax.jit(
        jax.shard_map(
            lambda w, v, g: (w - learning_rate * (beta * v + g), beta * v + g),
            mesh=mesh, in_specs=P("data"), out_specs=P("data"),
        )
    )
    return update(weights, velocity, gradient)
# %% cell quiz
answer = int("2")
