# scenario: starts the clock only after the call has returned, so each sample times the wait for the result but not the call (dispatch and tracing are left out)
# base: solution
# expect-fail: test-timing
# expect-message: start the clock before the call
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(repeats):
        result = fn(*args)
        start = time.perf_counter()
        result.block_until_ready()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples
