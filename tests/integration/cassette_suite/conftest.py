"""Runs the tests in reverse order when LOOPCHECK_REVERSE is set: a replay in another
order than the recording must not drift."""

import os


def pytest_collection_modifyitems(items):
    if os.environ.get("LOOPCHECK_REVERSE"):
        items.reverse()
