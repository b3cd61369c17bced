# scenario: times with time.process_time(): CPU time of the Python process, which does not advance while it waits for the devices
# base: solution
# expect-fail: test-timing
# expect-message: a sample ended before the result was ready
# %% cell timing
def completed_samples(fn, *args, repeats=7):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        fn(*args).block_until_ready()
        samples.append((time.process_time() - start) * 1e6)
    return samples
