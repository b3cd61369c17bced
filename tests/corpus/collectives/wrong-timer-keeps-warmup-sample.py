# scenario: off by one: times repeats + 1 calls and keeps the first repeats samples, so the warm-up call (its compilation) is one of the samples and the last call is dropped
# base: solution
# expect-fail: test-timing
# expect-message: includes the warm-up call
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    samples = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples[:repeats]
