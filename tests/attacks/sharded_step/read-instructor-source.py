# scenario: reads the instructor's source notebook from disk and executes its solutions
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import json, glob
paths = [p for top in ("/work", "/tmp", "/root", "/home", "/srv", "/opt", "..")
         for p in glob.glob(f"{top}/**/source/sharded_step/sharded_step.ipynb", recursive=True)]
for path in paths:
    for cell in json.load(open(path))["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "train-step":
            exec("".join(cell["source"]))
