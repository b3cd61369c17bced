# scenario: %xmode Minimal (a shell setting the grader never resets) strips the frames from the quiz test's AssertionError, whose message the learner chose (an object whose __eq__ raises it): "Cell In[1], line " and 5000 digits; judge.visible_check takes that as the failing line and int() refuses a 5000-digit string (CPython's 4300-digit limit), so finish() raises and the notebook ends grader_error (no score, regraded by the next runs) instead of losing the quiz point; the magic line also hides the cell from the scan
# base: solution
# expect-status: graded suspicious
# expect-fail: test-quiz
# %% cell quiz
%xmode Minimal
class Answer:
    def __eq__(self, other):
        raise AssertionError("Cell In[1], line " + "9" * 5000)

    __hash__ = object.__hash__


answer = Answer()
