# loopcheck-mutant
# defect: trusts a program to call only tools it was given: a child call's name is never looked up in the registry, so a call to an unknown tool is dispatched to the backend
# caught-by: dispatch/registered-only
# cases: program/10-child-unknown-tool
# supports: previous_response_id,stateless,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_lookup = loop.Tools.lookup
_handle = loop.Tools.handle


def handle(self, call):
    from_program = call.caller is not None and call.caller.type == "program"
    if from_program:
        # Any name a program uses is taken for a tool: no schema, any caller.
        self.lookup = lambda name: _lookup(self, name) or (None, ["programmatic"])
    else:
        self.lookup = lambda name: _lookup(self, name)
    return _handle(self, call)


loop.Tools.handle = handle

loop.main()
