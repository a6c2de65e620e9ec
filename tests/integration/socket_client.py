"""A bare WebSocket-mode client for the record tests, on the `websockets` package: a
`generate: false` warm-up, a create on a named lane chained to it, then the call's output,
whose create the upstream may refuse (a 429, not retried), then a clean close. Prints one
JSON line: how each answer ended.

Environment: OPENAI_BASE_URL (`http://127.0.0.1:PORT/v1`), OPENAI_API_KEY.
"""

import json
import os

from websockets.sync.client import connect

TERMINAL = {"response.completed", "response.failed", "response.incomplete", "error"}
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
QUESTION = [{"role": "user", "content": "Is it warm enough in Lisbon for the beach today?"}]

url = os.environ["OPENAI_BASE_URL"].replace("http", "ws", 1) + "/responses"
key = os.environ["OPENAI_API_KEY"]
with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as socket:

    def create(**fields):
        socket.send(json.dumps({"type": "response.create", "model": "gpt-5", "tools": TOOLS, **fields}))
        while True:
            event = json.loads(socket.recv())
            if event["type"] in TERMINAL:
                return event

    warm = create(input=QUESTION, generate=False)
    chained = create(input=[], previous_response_id=warm["response"]["id"], stream_id="lane-a")
    call = chained["response"]["output"][0]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "{}"}
    refused = create(input=[output], previous_response_id=chained["response"]["id"])
    ends = [warm["type"], chained["type"], chained.get("stream_id"), refused.get("status")]
print(json.dumps(ends))
