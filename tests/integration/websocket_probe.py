"""The official Python SDK's WebSocket client against the fake: one tool-call loop over
`client.responses.connect()`, each turn chained by `previous_response_id` with only its new
items. Prints one JSON line: the event types of each turn and the final text.

Environment: LOOPCHECK_BASE_URL (the fake's `http://127.0.0.1:PORT/v1`), OPENAI_API_KEY.
"""

import json
import os
import sys

from openai import OpenAI
from openai.types.responses import Response

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


def turn(connection, **create):
    """Sends one response.create and reads its events up to the terminal one."""
    connection.response.create(model="gpt-5", tools=TOOLS, **create)
    types = []
    for event in connection:
        types.append(event.type)
        if event.type == "error":
            raise SystemExit(f"error event: {event.to_json()}")
        if event.type in ("response.completed", "response.failed", "response.incomplete"):
            # The SDK's own model must accept the terminal response.
            return types, Response.model_validate(event.response.model_dump())
    raise SystemExit("the connection closed before a terminal event")


def main():
    client = OpenAI(base_url=os.environ["LOOPCHECK_BASE_URL"], max_retries=0)
    turns = []
    with client.responses.connect() as connection:
        types, response = turn(
            connection,
            input=[{"role": "user", "content": "Do I need an umbrella in Lisbon this afternoon?"}],
        )
        turns.append(types)
        while True:
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                break
            outputs = [
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps({"city": json.loads(call.arguments)["city"], "condition": "light rain"}),
                }
                for call in calls
            ]
            types, response = turn(connection, previous_response_id=response.id, input=outputs)
            turns.append(types)
    print(json.dumps({"turns": turns, "status": response.status, "text": response.output_text}))


if __name__ == "__main__":
    sys.exit(main())
