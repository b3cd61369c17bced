# scenario: correct, written differently: analytic jnp gradient in a functools.partial-decorated jit, host update written out in float64
# base: solution
# expect-fail:
# %% cell train-step
from functools import partial


def loss(weights, features, labels):
    return jnp.average(jnp.square(features @ weights - labels))


def make_train_step(learning_rate):
    @partial(jax.jit, in_shardings=(replicated, rows, labels_sharding),
             out_shardings=(replicated, replicated, replicated))
    def step(weights, features, labels):
        residual = features @ weights - labels
        gradient = 2.0 * features.T @ residual / labels.shape[0]
        return weights - learning_rate * gradient, jnp.mean(residual * residual), gradient

    return step


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    features = host_x.astype(np.float64)
    labels = features @ np.asarray(true_weights, dtype=np.float64)
    start64 = np.asarray(start, dtype=np.float64)
    host_new_w = start64 - learning_rate * (2.0 / len(labels)) * features.T @ (features @ start64 - labels)
    sharded_new_w, _, _ = make_train_step(learning_rate)(
        jax.device_put(start64.astype(np.float32), replicated), x,
        jax.device_put(labels.astype(np.float32), labels_sharding))
    return sharded_new_w, host_new_w


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
