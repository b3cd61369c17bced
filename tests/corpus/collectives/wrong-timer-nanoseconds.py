# scenario: times with perf_counter_ns and returns nanoseconds, not microseconds
# base: solution
# expect-fail: test-timing
# expect-message: the samples are in nanoseconds, not microseconds
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn(*args).block_until_ready()
        samples.append(float(time.perf_counter_ns() - start))
    return samples
