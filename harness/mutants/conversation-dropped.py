# loopcheck-mutant
# defect: names the conversation on the first request only and then chains responses with previous_response_id
# caught-by: state/conversation
# cases: state/02-conversation-mode
# supports: conversation

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def next_config(config, response, state):
    config = {k: v for k, v in config.items() if k != "conversation"}
    return {**config, "previous_response_id": response.id}


loop.next_config = next_config

loop.main()
