# loopcheck-mutant
# defect: runs a custom tool call without checking its input against the tool's regex grammar
# caught-by: dispatch/input-grammar
# cases: custom/03-grammar-broken
# supports: previous_response_id, custom
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def regex_grammar(format_):
    return None


loop.regex_grammar = regex_grammar

loop.main()
