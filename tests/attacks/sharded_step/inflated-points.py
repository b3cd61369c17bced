# scenario: raises the points of a test cell in its metadata
# base: solution
# points: test-quiz 100
# expect-status: tampered
# expect-fail:
