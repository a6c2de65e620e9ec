# loopcheck-equivalent
# form: sends function definitions without `strict: true`, which the Responses API takes as its default (strict mode), keeping an explicit `strict: false`; the way tool lists are often written by hand
# cases: state/*, program/*, correlation/01-single-call
# supports: previous_response_id,stateless,conversation,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    tools = [{k: v for k, v in tool.items() if not (k == "strict" and v is True)} for tool in config["tools"]]
    return {**config, "tools": tools}


loop.initial_config = initial_config

loop.main()
