# scenario: an infinite loop compiled by XLA (lax.while_loop ignores SIGINT)
# base: solution
# expect-status: timed_out
# expect-fail: test-transfer test-quiz
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    forever = jax.jit(lambda x: jax.lax.while_loop(lambda v: v > -1.0, lambda v: v + 1.0, x))
    forever(jnp.float32(0.0)).block_until_ready()


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
