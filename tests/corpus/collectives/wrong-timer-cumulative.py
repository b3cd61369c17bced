# scenario: starts the clock once before the loop: every sample includes the calls before it (cumulative times)
# base: solution
# expect-fail: test-timing
# expect-message: a cumulative time
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args).block_until_ready()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples
