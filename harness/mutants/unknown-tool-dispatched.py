# loopcheck-mutant
# defect: looks tools up by whatever name the model emits, so an unknown tool is dispatched to the backend
# caught-by: dispatch/registered-only
# cases: dispatch/01-unknown-tool
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_lookup = loop.Tools.lookup


def lookup(self, name):
    # "The backend knows its tools": anything not registered goes out unvalidated.
    return _lookup(self, name) or (None, ["direct", "programmatic"])


loop.Tools.lookup = lookup

loop.main()
