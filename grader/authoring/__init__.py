"""Authoring a lesson: a new assignment to start from (scaffold) and the checks before release (lint)."""
