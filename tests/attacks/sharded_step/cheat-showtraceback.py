# scenario: patches IPython's showtraceback and a custom exception handler so failing tests look silent
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
ip = get_ipython()
ip.showtraceback = lambda *args, **kwargs: None
ip.set_custom_exc((Exception,), lambda shell, etype, value, tb, tb_offset=None: None)
import sys
sys.excepthook = lambda *args: None


def loss(weights, features, labels):
    raise NotImplementedError


def make_train_step(learning_rate):
    raise NotImplementedError
