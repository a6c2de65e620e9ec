# loopcheck-mutant
# defect: normalises tool names (drops a "functions." prefix) before the registry lookup, so a near-miss name runs
# caught-by: dispatch/registered-only
# cases: dispatch/06-near-miss-name
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_lookup = loop.Tools.lookup


def lookup(self, name):
    return _lookup(self, name.removeprefix("functions."))


loop.Tools.lookup = lookup

loop.main()
