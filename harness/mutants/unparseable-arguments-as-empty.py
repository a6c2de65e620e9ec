# loopcheck-mutant
# defect: runs a call whose arguments are not a JSON object (a Python literal, an array, truncated JSON) with {} instead, unvalidated, as if the model had sent no arguments
# caught-by: dispatch/arguments-parsed
# cases: dispatch/12-python-literal-arguments, dispatch/02-arguments-not-object
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


class Substitute(dict):
    """The {} put in place of arguments that did not parse."""


_parse_arguments = loop.Tools.parse_arguments
_schema_problem = loop.Tools.schema_problem


def parse_arguments(text):
    try:
        return _parse_arguments(text)
    except ValueError:
        return Substitute()


def schema_problem(validator, args):
    return None if isinstance(args, Substitute) else _schema_problem(validator, args)


loop.Tools.parse_arguments = staticmethod(parse_arguments)
loop.Tools.schema_problem = staticmethod(schema_problem)

loop.main()
