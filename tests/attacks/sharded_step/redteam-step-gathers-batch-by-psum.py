# scenario: the training step copies the whole batch to every device before differentiating (the mistake of wrong-gathers-batch), but does the copy inside a shard_map region as a psum of zero buffers each device fills with its rows at its axis_index: an all-gather written as an all-reduce, so the compiled program holds no all-gather and the gather goes unseen (right values and placements, no data parallelism)
# base: solution
# expect-fail: test-placement
# expect-status: graded
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def _everyone(block):
    rows_here = block.shape[0]
    buffer = jnp.zeros((rows_here * jax.lax.psum(1, "data"),) + block.shape[1:], block.dtype)
    start = (jax.lax.axis_index("data") * rows_here,) + (0,) * (block.ndim - 1)
    return jax.lax.psum(jax.lax.dynamic_update_slice(buffer, block, start), "data")


def make_train_step(learning_rate):
    mesh_now = rows.mesh

    def step(weights, features, labels):
        # the mean is over the global batch, so every device needs all of it
        features, labels = jax.shard_map(
            lambda a, b: (_everyone(a), _everyone(b)), mesh=mesh_now,
            in_specs=(P("data", None), P("data")), out_specs=(P(), P()), check_vma=False)(features, labels)
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                   out_shardings=(replicated, replicated, replicated))


train_step = make_train_step(0.1)
