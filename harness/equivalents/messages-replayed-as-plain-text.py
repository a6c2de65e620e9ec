# loopcheck-equivalent
# form: stateless replays carry assistant messages in the easy form {"role": "assistant", "content": "<text>"} (as the AI SDK does)
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
    text = "".join(p["text"] for p in data["content"] if p["type"] == "output_text")
    return {"role": "assistant", "content": text}


loop.replay = replay

loop.main()
