# scenario: a student id that ends in U+3164 HANGUL FILLER, a letter (category Lo) that renders as nothing: "attack-redteam-invisible-id" plus an invisible letter looks exactly like another learner's id in grades.csv, formgrader and the report (a lone U+3164 or U+115F is an id that looks empty); the intake rule accepts it because it admits every letter; the rest is the solution
# base: solution
# expect-status: invalid_folder
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
