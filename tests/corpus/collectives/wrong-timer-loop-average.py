# scenario: times the whole loop of repeats completed calls once and returns its average as every sample: no sample times one call on its own
# base: solution
# expect-fail: test-timing
# expect-message: the samples are all the same
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args).block_until_ready()
    average = (time.perf_counter() - start) * 1e6 / repeats
    return [average] * repeats
