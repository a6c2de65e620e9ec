# loopcheck-mutant
# defect: resolves a function call by its bare name, ignoring its namespace, so a call under the wrong namespace or none runs the namespaced tool
# caught-by: dispatch/registered-only
# cases: tools/02-wrong-namespace
# supports: previous_response_id, namespaces

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def registered_name(self, call):
    # "Names are unique anyway": the first registered tool with the call's bare name.
    for name in self.registry:
        if name.rsplit(".", 1)[-1] == call.name:
            return name
    return call.name


loop.Tools.registered_name = registered_name

loop.main()
