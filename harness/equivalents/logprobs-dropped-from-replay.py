# loopcheck-equivalent
# form: asks for logprobs but replays assistant messages without them (the output_text parts keep their text and annotations), which the API accepts: logprobs describe the model's text and tell the model nothing
# cases: output/07-logprobs
# supports: previous_response_id, stateless, stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data.get("type") == "message":
        for part in data.get("content") or []:
            part.pop("logprobs", None)
    return data


loop.replay = replay

loop.main()
