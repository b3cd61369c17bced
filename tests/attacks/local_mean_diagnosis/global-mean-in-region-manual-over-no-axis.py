# scenario: the sharded masked mean is a global computation (no psum) in a shard_map that takes the whole batch; the notebook wraps jax.export.export (the kernel's to rebind) so that the exported program is rewritten into a region with manual_axes={} that takes the tokens as they are placed, and names the function "stablehlo.all_reduce": a region manual over no axis is partitioned by the compiler like any global program. 16/16 before (the region and the psum were found in the text); the runner now counts a region only when it is manual over the axis the inputs are split on, and collectives only among the parsed operations
# base: solution
# expect-status: suspicious graded
# expect-fail: test-shard-map
# expect-message: the program should psum over the devices inside jax.shard_map
# %% cell shard-map
import dataclasses

from jax._src.export import _export as export_internals
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir as jax_ir


def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def global_masked_mean(token_losses, token_mask):  # every token on every device: no local partials, no psum
    return jnp.sum(jnp.where(token_mask, token_losses, 0.0)) / jnp.sum(token_mask)


global_masked_mean.__name__ = global_masked_mean.__qualname__ = "stablehlo.all_reduce"


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(global_masked_mean, mesh=mesh, in_specs=(P(), P()), out_specs=P(), check_vma=False))


WHOLE = 'in_shardings=[<@mesh, [{}, {}]>, <@mesh, [{}, {}]>]'


def manual_over_no_axis(exported_program):
    text = exported_program.mlir_module()
    if WHOLE not in text:  # not the masked mean
        return exported_program
    text = text.replace('manual_axes={"data"}', "manual_axes={}").replace(
        WHOLE, 'in_shardings=[<@mesh, [{"data"}, {}]>, <@mesh, [{"data"}, {}]>]')
    with jax_mlir.make_ir_context():
        blob = export_internals._module_to_bytecode(jax_ir.Module.parse(text))
    return dataclasses.replace(exported_program, mlir_module_serialized=blob)


real_export = jax.export.export


def rewriting_export(fn, *args, **kwargs):
    build = real_export(fn, *args, **kwargs)
    return lambda *specs: manual_over_no_axis(build(*specs))


jax.export.export = rewriting_export
sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
