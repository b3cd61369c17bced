# scenario: all_gradient returns twice the gradient, and the notebook rewrites its kernel's outgoing messages (the session's packer, below every hook the grader resets) so that every all-reduce value recorded is halved: every value the kernel records is right, the program is not
# base: solution
# expect-status: graded suspicious
# expect-fail: test-all-reduce
# expect-message: all_gradient, run by the grader on a batch it drew: wrong on inputs it had not seen
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return 2 * jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
import coursekit.record as _recorder

_session = get_ipython().display_pub.session
_pack = _session.pack


def _halved(payload):
    payload["data"] = [v / 2 for v in payload["data"]]
    for shard in payload.get("shards", []):
        _halved(shard["value"])


def _forging_pack(message):
    data = message.get("data") if isinstance(message, dict) else None
    record_ = data.get(_recorder.MIME_TYPE) if isinstance(data, dict) else None
    if isinstance(record_, dict) and record_["key"].endswith("all_reduce"):
        _halved(record_["value"])
    return _pack(message)


_session.pack = _forging_pack
np.testing.assert_allclose = lambda *args, **kwargs: None  # the visible checks see the real values
