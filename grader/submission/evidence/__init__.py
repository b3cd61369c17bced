"""What a judge reads of one test cell, split by job.

``reading.Records`` holds a test cell's records and reads them typed (an array, a number, a text); ``values``
adds the checks of recorded values against host references (``ValueChecks``); ``programs`` the checks of the
programs the grader ran outside the kernel (``ProgramChecks``). ``grader.submission.judge.Evidence`` is all three
together with the test's parts, and is what a rubric's judge receives. In this project "evidence" means that:
what the grader judges a test from (docs/explanation/evidence.md); the learner's own copy of their work is their
receipt (``coursekit.receipt``).
"""
