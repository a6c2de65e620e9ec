# loopcheck-mutant
# defect: exits on arguments that are not valid JSON, so the process ends without a result line
# caught-by: terminal/result-line
# cases: dispatch/04-malformed-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def parse_arguments(text):
    try:
        return loop.json.loads(text)
    except ValueError as err:
        sys.exit(f"bad tool arguments {text!r}: {err}")  # SystemExit escapes main()


loop.Tools.parse_arguments = staticmethod(parse_arguments)

loop.main()
