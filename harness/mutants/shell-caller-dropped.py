# loopcheck-mutant
# defect: echoes the caller on the outputs of a program's function calls only, so a shell call the program made is answered without it
# caught-by: program/caller-echoed
# cases: shell/07-program-shell-call
# supports: previous_response_id, stateless, programmatic, shell

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_answer = loop.answer


def answer(call, output):
    item = _answer(call, output)
    if call.type != "function_call":
        item.pop("caller", None)
    return item


loop.answer = answer

loop.main()
