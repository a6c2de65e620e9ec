# loopcheck-equivalent
# form: sends no `include` in stateless mode and replays each reasoning item whole with the encrypted_content the API populates by default on every create (as LangChain.js does)
# cases: reasoning/*, state/01-instructions-every-request
# supports: stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    config.pop("include", None)
    return config


loop.initial_config = initial_config

loop.main()
