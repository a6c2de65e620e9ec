# loopcheck-mutant
# defect: validates arguments as if every schema had `additionalProperties: false`, so a call carrying a key a schema without it allows is rejected instead of run
# caught-by: dispatch/valid-executed
# cases: dispatch/15-additional-properties-omitted
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_schema_problem = loop.Tools.schema_problem


def schema_problem(validator, args):
    if validator is not None:
        declared = validator.schema.get("properties", {})
        extra = sorted(set(args) - set(declared))
        if extra:
            return f"unexpected keys: {extra}"
    return _schema_problem(validator, args)


loop.Tools.schema_problem = staticmethod(schema_problem)

loop.main()
