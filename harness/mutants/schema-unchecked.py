# loopcheck-mutant
# defect: never validates arguments against the tool schema, so schema-violating calls are dispatched
# caught-by: dispatch/schema-valid
# cases: dispatch/09-schema-violation, dispatch/05-missing-required-field
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.schema_problem = staticmethod(lambda validator, args: None)

loop.main()
