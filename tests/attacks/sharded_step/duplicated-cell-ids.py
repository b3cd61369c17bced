# scenario: duplicates the quiz cell (same grade_id and cell id) with a wrong answer first; the first copy counts
# base: solution
# duplicate: quiz
# expect-status: tampered
# expect-fail: test-quiz
