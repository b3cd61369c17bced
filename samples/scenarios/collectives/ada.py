# scenario: a learner who solved everything (the instructor's solutions)
# base: solution
# expect-fail:
