# scenario: a cell appended at the end prints In, _ih, Out and IPython's history (they hold the hidden tests); the rest is correct
# base: solution
# expect-status: suspicious
# expect-fail:
# %% append
print("In:", In)
print("_ih:", "\n".join(_ih))
print("Out:", Out)
history = get_ipython().history_manager
print("raw:", "\n".join(history.input_hist_raw))
try:
    print("range:", [line for _, _, line in history.get_range(raw=True)])
except Exception as error:
    print("no history database:", error)
print(repr(_ih[-2]).encode().hex())
