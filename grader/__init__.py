"""Build, execute and grade the distributed-training course.

One job per module; ``grader.pipeline`` lists the grading steps in order.
"""
