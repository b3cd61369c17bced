# scenario: a correct notebook whose last cell sends one error with an 8 MB evalue and a one-line traceback (the output cap counts the evalue)
# base: solution
# expect-status: too_much_output
# expect-fail:
# %% append
get_ipython()._showtraceback(ValueError, "x" * 8_000_000, ["ValueError: (a short traceback)"])
