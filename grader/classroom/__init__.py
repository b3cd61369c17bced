"""Grading a class: scheduled locally (batch) or on a dask.distributed cluster over TLS."""
