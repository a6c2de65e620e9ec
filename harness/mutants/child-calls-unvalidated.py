# loopcheck-mutant
# defect: trusts the calls a program makes: their arguments are never checked against the tool schema, only direct calls are
# caught-by: dispatch/schema-valid
# cases: program/06-child-invalid-arguments
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_schema_problem = loop.Tools.schema_problem
_handle = loop.Tools.handle


def handle(self, call):
    from_program = call.caller is not None and call.caller.type == "program"
    self.schema_problem = (lambda validator, args: None) if from_program else _schema_problem
    return _handle(self, call)


loop.Tools.handle = handle

loop.main()
