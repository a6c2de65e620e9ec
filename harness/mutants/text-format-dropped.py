# loopcheck-mutant
# defect: checks the final message against the task's schema but never sends text.format, so the model is never asked for structured output
# caught-by: terminal/structured-output
# cases: output/04-structured-valid
# supports: previous_response_id, stateless, stream, text_format

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    config.pop("text", None)
    return config


loop.initial_config = initial_config

loop.main()
