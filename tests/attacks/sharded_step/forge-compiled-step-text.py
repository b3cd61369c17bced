# scenario: the step gathers the whole batch onto every device (constraints to replicated, as wrong-gathers-batch), and make_train_step returns an object whose lower(...).compile().as_text() is an empty text: the hidden test counted the all-gathers of the compiled step in text the kernel produced (hidden.compiled.all_gather), so the gather went unseen and test-placement passed; the grader now reads the all-gathers from the step it compiles itself for its own inputs
# base: solution
# expect-status: graded suspicious
# expect-fail: test-placement
# expect-message: gathers the batch
# %% cell train-step
def loss(weights, features, labels):
    residual = features @ weights - labels
    return jnp.mean(residual**2)


class QuietLowering:
    def compile(self):
        return self

    def as_text(self):
        return ""


class Step:
    def __init__(self, program):
        self.program = program

    def __call__(self, weights, features, labels):
        return self.program(weights, features, labels)

    def lower(self, *args):
        return QuietLowering()


def make_train_step(learning_rate):
    def step(weights, features, labels):
        features = jax.lax.with_sharding_constraint(features, replicated)
        labels = jax.lax.with_sharding_constraint(labels, replicated)
        value, gradient = jax.value_and_grad(loss)(weights, features, labels)
        return weights - learning_rate * gradient, value, gradient

    return Step(jax.jit(step, in_shardings=(replicated, rows, labels_sharding),
                        out_shardings=(replicated, replicated, replicated)))


train_step = make_train_step(0.1)
