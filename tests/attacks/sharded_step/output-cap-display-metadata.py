# scenario: a correct notebook whose last cell shows a tiny display with 8 MB of metadata (the output cap counts metadata)
# base: solution
# expect-status: too_much_output
# expect-fail:
# %% append
from IPython.display import display

display({"text/plain": "a small picture"}, metadata={"note": "m" * 8_000_000}, raw=True)
