# loopcheck-equivalent
# form: fills in `strict: true` on every function tool the task wrote without `strict` (what pydantic-based tool helpers emit), which means what the omission means: the Responses API takes a missing `strict` as strict mode
# cases: state/04-strict-omitted, state/03-tool-definitions-resent
# supports: previous_response_id,stateless,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    tools = [{"strict": True, **tool} if tool.get("type") == "function" else tool for tool in config["tools"]]
    return {**config, "tools": tools}


loop.initial_config = initial_config

loop.main()
