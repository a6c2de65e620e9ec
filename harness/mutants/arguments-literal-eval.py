# loopcheck-mutant
# defect: parses arguments that are not JSON with ast.literal_eval as a fallback, so a Python-literal call ({'sku': 'A7'}) runs as if the model had written JSON
# caught-by: dispatch/arguments-parsed
# cases: dispatch/12-python-literal-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

import ast  # noqa: E402

_parse_arguments = loop.Tools.parse_arguments


def parse_arguments(text):
    try:
        return _parse_arguments(text)
    except ValueError:
        args = ast.literal_eval(text)
        if not isinstance(args, dict):
            raise ValueError("expected a JSON object") from None
        return args


loop.Tools.parse_arguments = staticmethod(parse_arguments)

loop.main()
