"""Running a notebook in the learner's sealed kernel: cell by cell, with the grader's hooks reset."""
