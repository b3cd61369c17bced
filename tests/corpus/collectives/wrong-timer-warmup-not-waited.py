# scenario: the warm-up call is made but its result is never waited for, so the first timed sample also waits for the warm-up
# base: solution
# expect-fail: test-timing
# expect-message: start with one warm-up call and wait for its result
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples
