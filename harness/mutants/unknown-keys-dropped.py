# loopcheck-mutant
# defect: silently drops argument keys the tool schema does not declare, then validates and dispatches the rest
# caught-by: dispatch/schema-valid
# cases: dispatch/11-exact-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

import json  # noqa: E402

_handle = loop.Tools.handle


def handle(self, call):
    entry = self.lookup(call.name)
    try:
        args = json.loads(call.arguments)
    except ValueError:
        return _handle(self, call)
    if entry is None or entry[0] is None or not isinstance(args, dict):
        return _handle(self, call)
    declared = entry[0].schema.get("properties", {})
    kept = {key: value for key, value in args.items() if key in declared}
    return _handle(self, call.model_copy(update={"arguments": json.dumps(kept)}))


loop.Tools.handle = handle

loop.main()
