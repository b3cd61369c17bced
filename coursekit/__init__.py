"""Helpers that course notebooks import inside the learner's kernel.

Everything here is public: learners can read it. Nothing here decides a grade;
the grader judges recorded values in its own process (see ``grader.submission.judge``).
"""
