# scenario: prints 200 MB
# base: solution
# expect-status: too_much_output
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% append setup
for _ in range(200):
    print("x" * 1_000_000)
