# scenario: programs with no collective at all (one global jit each) and a lowered_text replaced in the notebook's namespace by one that names the expected collective for each program: every text the kernel records looks right
# base: solution
# expect-fail: test-all-reduce test-reduce-scatter test-all-gather test-lowered
# expect-message: it has no shard_map region
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    def reduce_all(a, b, weights):
        return 2 * a.T @ (a @ weights - b) / global_count

    def reduce_shard(a, b, weights):
        return 2 * a.T @ (a @ weights - b) / global_count

    def gather_all(portion):
        return portion

    return (jax.jit(reduce_all, out_shardings=NamedSharding(mesh, P())),
            jax.jit(reduce_shard, out_shardings=NamedSharding(mesh, P("data"))),
            jax.jit(gather_all, out_shardings=NamedSharding(mesh, P())))


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
_real_lowered_text = lowered_text
_named = {"reduce_all": "stablehlo.all_reduce", "reduce_shard": "stablehlo.reduce_scatter",
          "gather_all": "stablehlo.all_gather"}


def lowered_text(fn, *args):
    return _real_lowered_text(fn, *args) + f"\n// {_named.get(getattr(fn, '__name__', ''), '')}"
