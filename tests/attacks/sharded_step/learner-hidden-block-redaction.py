# scenario: a learner cell holds its own "hidden tests" block of 37,000 distinct lines (512 KiB) and an earlier cell prints 12,000 small outputs; the feedback page redacted every line of every hidden block of every code cell, learner cells included, from every text it showed: 37,000 replacements per output, 62-104 s of the grader's time for one page, measured (two minutes with three such cells), so a class of these kept the grader busy for hours; only the course's test cells are read for hidden lines now
# base: solution
# expect-status: graded
# expect-fail:
# %% append setup
from IPython.display import display
for _ in range(12_000):
    display({"text/plain": "x"}, raw=True)
# %% append quiz
### BEGIN HIDDEN TESTS
# %% repeat 37000: #{i:012d}
### END HIDDEN TESTS
