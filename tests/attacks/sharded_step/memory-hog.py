# scenario: allocates 8 GiB (over the per-submission cap) in the quiz cell; everything else correct
# base: solution
# expect-status: out_of_memory
# expect-fail: test-quiz
# %% cell quiz
hog = np.ones(8 * 1024**3, dtype=np.uint8)
answer = 2
