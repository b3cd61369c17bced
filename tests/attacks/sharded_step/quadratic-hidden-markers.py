# scenario: a cell of comment lines '### BEGIN HIDDEN TESTS' with no END line (22,000 lines, within the 512 KiB a cell may hold); the feedback page found hidden blocks with a regular expression whose lazy scan restarts at every BEGIN line, quadratic in the cell's length: about 7 minutes per pass of C regex work holding the GIL (four passes per page), which froze every worker of the grader for half an hour per such notebook, and so a batch of them never ended; hidden blocks are now found line by line, in linear time
# base: solution
# expect-status: graded
# expect-fail:
# %% append quiz
# %% repeat 22000: ### BEGIN HIDDEN TESTS
pass
