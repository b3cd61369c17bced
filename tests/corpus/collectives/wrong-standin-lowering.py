# scenario: stand-in objects: programs without any collective whose own .lower(...).compiler_ir() returns text naming the collectives
# base: solution
# expect-fail: test-all-reduce test-reduce-scatter test-all-gather test-lowered
# expect-message: the lowered program has no stablehlo.all_reduce
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


class _Text:
    def compiler_ir(self, dialect=None):
        return ("module { func.func public @main() { stablehlo.all_reduce stablehlo.reduce_scatter "
                "stablehlo.all_gather } }")

    as_text = compiler_ir


class _Program:
    """Computes the right values with a plain global jit (no collective written) and describes itself as lowered text."""

    def __init__(self, fn, out):
        self.fn = jax.jit(fn, out_shardings=out)

    def __call__(self, *args):
        return self.fn(*args)

    def lower(self, *args, **kwargs):
        return _Text()


def make_collectives(mesh, global_count):
    def full_gradient(a, b, weights):
        return 2 * a.T @ (a @ weights - b) / global_count

    return (_Program(full_gradient, NamedSharding(mesh, P())), _Program(full_gradient, NamedSharding(mesh, P("data"))),
            _Program(lambda portion: portion, NamedSharding(mesh, P())))


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
