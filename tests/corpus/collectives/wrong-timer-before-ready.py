# scenario: stops the clock when the call returns and waits for the result only afterwards (times dispatch)
# base: solution
# expect-fail: test-timing
# expect-message: a sample ended before the result was ready
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn(*args)
        samples.append((time.perf_counter() - start) * 1e6)
        result.block_until_ready()
    return samples
