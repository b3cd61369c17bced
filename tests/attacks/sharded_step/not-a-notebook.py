# scenario: valid JSON, but not an nbformat 4 notebook
# expect-status: invalid_notebook
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% raw
{"cells": [{"cell_type": "code", "source": 42}], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
