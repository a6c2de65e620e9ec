"""Four small tool loops on the official SDK, each with a cassette of its own: the
stand-in upstream calls `lookup` twice (step 1, then step 2), then answers
`done: <topic>`, so each loop makes three requests chained by previous_response_id."""

import json

import openai
import pytest

TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look one step of the research up.",
        "parameters": {
            "type": "object",
            "properties": {"step": {"type": "integer"}},
            "required": ["step"],
            "additionalProperties": False,
        },
    }
]


def research(topic):
    """The loop: answer each call until the model answers in text; (text, requests)."""
    client = openai.OpenAI(max_retries=0)
    response = client.responses.create(model="gpt-5", input=f"Research {topic}.", tools=TOOLS)
    requests = 1
    while True:
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text, requests
        outputs = [
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": f"result {json.loads(call.arguments)['step']}",
            }
            for call in calls
        ]
        response = client.responses.create(
            model="gpt-5", previous_response_id=response.id, input=outputs, tools=TOOLS
        )
        requests += 1


@pytest.mark.loopcheck_cassette
def test_tides():
    assert research("tides") == ("done: tides", 3)


@pytest.mark.loopcheck_cassette
def test_comets():
    assert research("comets") == ("done: comets", 3)


@pytest.mark.loopcheck_cassette
@pytest.mark.parametrize("topic", ["glaciers"])
def test_topic(topic):
    assert research(topic) == (f"done: {topic}", 3)


class TestNamed:
    def test_dunes(self, loopcheck_cassette):
        assert loopcheck_cassette.base_url.startswith("http://127.0.0.1:")
        assert research("dunes") == ("done: dunes", 3)
