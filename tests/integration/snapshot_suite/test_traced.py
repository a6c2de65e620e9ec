"""A loop that puts a fresh trace id in every request's `metadata`: its snapshot drifts on
every run unless loopcheck.toml redacts the field (the pytest twin of traced.test.mjs)."""

import json
import uuid

import pytest
from openai import OpenAI


@pytest.mark.loopcheck(cases=["correlation/01-single-call"], states=["previous_response_id"])
def test_traced_loop(loopcheck_session):
    s = loopcheck_session
    client = OpenAI(base_url=s.base_url, api_key=s.api_key, max_retries=0)
    request = {"model": s.task["model"], "tools": s.task["tools"],
               "metadata": {"trace_id": uuid.uuid4().hex}}
    if s.task.get("instructions"):
        request["instructions"] = s.task["instructions"]
    response = client.responses.create(**request, input=s.task["input"])
    while calls := [item for item in response.output if item.type == "function_call"]:
        outputs = []
        for call in calls:
            _, answer = s.call_tool(call.name, call.call_id, json.loads(call.arguments),
                                    principal=s.task.get("principal"))
            outputs.append({"type": "function_call_output", "call_id": call.call_id,
                            "output": json.dumps(answer.get("result", answer))})
        response = client.responses.create(**request, previous_response_id=response.id, input=outputs)
    s.assert_conforms({"status": "completed", "output_text": response.output_text})
