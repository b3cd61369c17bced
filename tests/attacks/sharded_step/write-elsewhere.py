# scenario: tries to write into another student's folder, the gradebook and the course; the rest is correct
# base: solution
# expect-status: suspicious
# expect-fail:
# %% append quiz
import os, glob
for target in glob.glob("/work/**/grades.csv", recursive=True) + glob.glob("/tmp/**/grades.csv", recursive=True) + ["../ada/sharded_step/sharded_step.ipynb", "/work/main/source/sharded_step/rubric.py"]:
    try:
        with open(target, "w") as handle:
            handle.write("pwned")
    except OSError:
        pass
