# loopcheck-mutant
# defect: repairs arguments that are not valid JSON by closing the open string and brackets, so a truncated call runs on a guess
# caught-by: dispatch/arguments-parsed
# cases: dispatch/04-malformed-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_parse_arguments = loop.Tools.parse_arguments


def repaired(text):
    """The text with its open string and brackets closed, the way a lenient parser does."""
    closers, in_string, escaped = [], False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
    return text + ('"' if in_string else "") + "".join(reversed(closers))


def parse_arguments(text):
    try:
        return _parse_arguments(text)
    except ValueError:
        return _parse_arguments(repaired(text))


loop.Tools.parse_arguments = staticmethod(parse_arguments)

loop.main()
