# loopcheck-mutant
# defect: validates arguments by hand, checking only required keys and JSON types, so pattern, enum, minimum and additionalProperties go unchecked
# caught-by: dispatch/schema-valid
# cases: dispatch/11-exact-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def schema_problem(validator, args):
    if validator is None:
        return None
    schema = validator.schema
    for key in schema.get("required", []):
        if key not in args:
            return f"'{key}' is a required property"
    for key, value in args.items():
        expected = TYPES.get(schema.get("properties", {}).get(key, {}).get("type"))
        if expected is not None and not isinstance(value, expected):
            return f"'{key}' has the wrong type"
    return None


loop.Tools.schema_problem = staticmethod(schema_problem)

loop.main()
