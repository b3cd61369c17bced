# scenario: publishes fake records with the lesson's values before the tests run, and patches the recorder
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
from IPython.display import display
import coursekit.record as recorder

for key, value in [("lesson.loss", 4.875), ("quiz.answer", 2)]:
    display({recorder.MIME_TYPE: {"key": key, "value": recorder.encode(value)}}, raw=True)

_real_record = recorder.record
def record(key, value):
    _real_record(key, np.array([-5.25, -0.75], dtype=np.float32))
    _real_record(key, value)

recorder.record = record
