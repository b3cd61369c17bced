# scenario: uses the compilation cache as an oracle for the answer: compiles two candidate steps (the mean loss and a summed loss) and keeps the one the grader's cache already holds (a hit is one of JAX's monitoring events; a compile's duration would tell as well). Grading kernels read only what the released notebook compiles, so no candidate hits, the oracle says nothing and the wrong fallback is graded as wrong
# base: solution
# expect-fail: test-loss-and-gradient
# %% cell train-step
from jax import monitoring

_events = []
monitoring.register_event_listener(lambda name, **_: _events.append(name))


def mean_loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


def sum_loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.sum(residual**2)


def candidate(loss_function):
    def make(learning_rate):
        def step(weights, features, labels):
            value, gradient = jax.value_and_grad(loss_function)(weights, features, labels)
            return weights - learning_rate * gradient, value, gradient

        return jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                       out_shardings=(replicated, replicated, replicated))

    return make


def already_compiled(make):
    before = _events.count("/jax/compilation_cache/cache_hits")
    make(0.1).lower(w, x, y).compile()
    return _events.count("/jax/compilation_cache/cache_hits") > before


loss = mean_loss if already_compiled(candidate(mean_loss)) else sum_loss
make_train_step = candidate(loss)
train_step = make_train_step(0.1)
