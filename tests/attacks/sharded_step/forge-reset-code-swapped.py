# scenario: a blank notebook that keeps the grader's reset objects where they are but guts them: the reset function's __code__ becomes a no-op and its saved state (a closure cell) is swapped for an empty tuple, so an identity check on the function object alone still passes; a pre_run_cell hook then sets the quiz answer inside the quiz test (the learner never answered)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
_shell = get_ipython()
_holder = getattr(_shell, "_grader_hooks", None)
_run = _holder.__dict__["run"] if _holder is not None else None
if _run is not None:
    for _cell in _run.__closure__ or ():
        if isinstance(_cell.cell_contents, tuple):
            _cell.cell_contents = ()


    def _gutted():
        state = None

        def run(R, expected):  # the same free variable as the grader's, so the code object fits
            return state

        return run

    _run.__code__ = _gutted().__code__


def _answer(info):
    if "quiz.answer" in (info.raw_cell or ""):
        _shell.user_ns["answer"] = 2


_shell.events.register("pre_run_cell", _answer)
