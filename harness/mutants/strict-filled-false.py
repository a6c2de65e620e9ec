# loopcheck-mutant
# defect: fills in `strict: false` on every function tool the task wrote without `strict` (a serializer whose flag defaults off), turning off the strict mode an omitted `strict` means
# caught-by: state/config-resent
# cases: state/04-strict-omitted, dispatch/14-strict-omitted
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    tools = [{"strict": False, **tool} if tool.get("type") == "function" else tool for tool in config["tools"]]
    return {**config, "tools": tools}


loop.initial_config = initial_config

loop.main()
