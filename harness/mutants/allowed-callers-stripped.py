# loopcheck-mutant
# defect: converts tools through a schema that knows only type, name, description, parameters and strict, so `allowed_callers` is stripped and no program may call any tool
# caught-by: state/config-resent
# cases: state/03-tool-definitions-resent
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

KNOWN = {"type", "name", "description", "parameters", "strict"}
_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    tools = [{k: v for k, v in tool.items() if k in KNOWN} for tool in config["tools"]]
    return {**config, "tools": tools}


loop.initial_config = initial_config

loop.main()
