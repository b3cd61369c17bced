"""A term's records: what a term's grades depend on, a folder that says it holds them, and its backup.

    records.py   which files of a grading output are the term's records, and which are only made again
    guard.py     a folder marked as a term's; the commands that would replace or delete records refuse it
    backup.py    ``python -m grader term backup|restore``: one archive, checked, consistent while grading goes on
    commands.py  ``python -m grader term init|status|guard|clean|backup|restore``
"""
