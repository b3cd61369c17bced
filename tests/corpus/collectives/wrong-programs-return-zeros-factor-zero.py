# scenario: the exported gradient programs return zeros (a psum of zeros in shard_map) while local_contribution returns 0 only when a hidden test exports a program, so the recorded own sum is 0 and the in-kernel values are NumPy placed on the devices
# base: solution
# expect-fail: test-all-reduce test-reduce-scatter
# expect-message: wrong on inputs it had not seen
# expect-status: graded
# %% cell collectives
import linecache
import sys


def _hidden_exporting_caller():
    """True when the test cell calling us is past its hidden marker and will export a program."""
    frame = sys._getframe(1)
    while frame is not None:
        lines = linecache.getlines(frame.f_code.co_filename)
        marks = [i for i, line in enumerate(lines) if line.lstrip().startswith("### BEGIN " + "HIDDEN TESTS")]
        if marks and any("export" + "ed(" in line for line in lines) and frame.f_lineno - 1 > marks[0]:
            return True
        frame = frame.f_back
    return False


def local_contribution(features, labels, weights, global_count):
    if _hidden_exporting_caller():
        return 0.0 * weights  # "program.own_sum" becomes 0, so the rubric expects 0 * gradient
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def _host_gradient(a, b, w):
    a, b, w = (np.asarray(v, dtype=np.float64) for v in (a, b, w))
    return (2 * a.T @ (a @ w - b) / len(b)).astype(np.float32)


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    # What gets exported: NOT the gradient, just zeros that went through a psum / psum_scatter.
    def bogus_all(a, b, weights):
        return jax.lax.psum(jnp.zeros_like(weights), "data")

    def bogus_shard(a, b, weights):
        return jax.lax.psum_scatter(jnp.zeros_like(weights), "data", tiled=True)

    def all_gradient(a, b, w):
        if isinstance(a, jax.core.Tracer):
            return jax.shard_map(bogus_all, mesh=mesh, in_specs=in_specs, out_specs=P())(a, b, w)
        return jax.device_put(_host_gradient(a, b, w), NamedSharding(mesh, P()))  # NumPy on the host

    def shard_gradient(a, b, w):
        if isinstance(a, jax.core.Tracer):
            return jax.shard_map(bogus_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data"))(a, b, w)
        return jax.device_put(_host_gradient(a, b, w), NamedSharding(mesh, P("data")))  # NumPy on the host

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
