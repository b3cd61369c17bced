# scenario: a correct notebook whose last cell updates one display 40,000 times (16 MB of update_display_data; the output cap counts updates)
# base: solution
# expect-status: too_much_output
# expect-fail:
# %% append
from IPython.display import display

handle = display({"text/plain": "0"}, raw=True, display_id=True)
for step in range(40_000):
    handle.update({"text/plain": "u" * 400}, raw=True)
