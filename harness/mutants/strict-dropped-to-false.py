# loopcheck-mutant
# defect: sends every function tool with `strict: false` (a serializer defaulting the flag off), so the model's calls are no longer held to the schemas the task made strict
# caught-by: state/config-resent
# cases: state/03-tool-definitions-resent
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    tools = [{**tool, "strict": False} if tool.get("type") == "function" else tool for tool in config["tools"]]
    return {**config, "tools": tools}


loop.initial_config = initial_config

loop.main()
