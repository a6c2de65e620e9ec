# loopcheck-equivalent
# form: stateless replays carry assistant messages without id, status or logprobs, as {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ..., "annotations": []}]} (as LangChain does)
# cases: correlation/03-mixed-items, reasoning/*, terminal/01-message-beside-calls
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data["type"] != "message":
        return data
    parts = [
        {"type": "output_text", "text": part["text"], "annotations": []}
        for part in data["content"]
        if part["type"] == "output_text"
    ]
    return {"type": "message", "role": "assistant", "content": parts}


loop.replay = replay

loop.main()
