# scenario: returns objects whose comparisons always pass and a float64 subclass
# base: solution
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer
# %% cell train-step
class AlwaysEqual:
    shape = (2,)
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.array([-5.25, -0.75], dtype=np.float32)
    def __float__(self): return 4.875
    def __getattr__(self, name): return self


class Sneaky(np.float64):
    def __eq__(self, other): return True


def loss(weights, features, labels):
    return Sneaky(4.875)


def make_train_step(learning_rate):
    def step(weights, features, labels):
        return AlwaysEqual(), Sneaky(4.875), AlwaysEqual()
    return step


train_step = make_train_step(0.1)
# %% cell transfer
def transfer_step(true_weights, start, learning_rate):
    return AlwaysEqual(), AlwaysEqual()


transfer_w, transfer_reference = transfer_step([-1.0, 3.0], [0.2, -0.1], 0.05)
