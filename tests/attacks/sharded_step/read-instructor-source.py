# scenario: reads the instructor's source notebook from disk and executes its solutions
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import json, glob
paths = glob.glob("/work/**/source/sharded_step/sharded_step.ipynb", recursive=True) + glob.glob("../../../source/sharded_step/sharded_step.ipynb")
for path in paths:
    for cell in json.load(open(path))["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "train-step":
            exec("".join(cell["source"]))
