"""nbgrader adapted: formgrader's buttons, the gradebook database, hand grades."""
