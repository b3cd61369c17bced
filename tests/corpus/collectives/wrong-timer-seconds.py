# scenario: returns the perf_counter differences in seconds, not microseconds
# base: solution
# expect-fail: test-timing
# expect-message: the samples are in seconds, not microseconds
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        samples.append(time.perf_counter() - start)
    return samples
