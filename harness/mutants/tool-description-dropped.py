# loopcheck-mutant
# defect: rebuilds the tool list for every request after the first from names and schemas alone, so the model loses each tool's description from the second request on
# caught-by: state/config-resent
# cases: state/03-tool-definitions-resent
# supports: previous_response_id,stateless,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_next_config = loop.next_config


def next_config(config, response, state):
    config = _next_config(config, response, state)
    tools = [{k: v for k, v in tool.items() if k != "description"} for tool in config["tools"]]
    return {**config, "tools": tools}


loop.next_config = next_config

loop.main()
