"""The course's grading service: submissions graded as they arrive, feedback minutes after Submit.

``python -m grader serve`` runs beside the instructor's server (or as a JupyterHub service). It watches nbgrader's
exchange for new submissions (``exchange``), decides by the instructor's attempts policy whether each is graded now
(``attempts``), grades it with the sealed grader in a pool of warm kernels (``pool``), publishes the attempt that
counts into the course's gradebook and releases that learner's feedback into the exchange, where the Assignment
List's "Fetch Feedback" finds it (``app``). The same process answers Validate's requests for named diagnoses of
visible checks (``validation``), so no rubric ever reaches the learner's side. Over a term: regrade requests and
their answers (``appeals``), and one test graded again on the notebooks that count once it was fixed (``retest``,
``python -m grader grade --test ID``).
"""
