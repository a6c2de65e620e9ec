"""A support assistant's tool loop, as an application keeps it: the model proposes tool
calls, the loop validates each against its registry, runs it, and answers it under its
own call_id, within a round budget. The tools themselves are passed in (`execute`), so a
test can point them at loopcheck's fixture backend and the application at its real ones.
"""

import json

import jsonschema
import openai


class LoopFailed(Exception):
    def __init__(self, reason, detail):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def run_support_loop(client, *, model, user_input, tools, execute, instructions=None, max_rounds=6):
    """Runs the loop to its end; the result object loopcheck expects
    ({"status": "completed", "output_text": ...} or {"status": "failed", ...})."""
    try:
        return {"status": "completed", "output_text": _loop(
            client, model, user_input, tools, execute, instructions, max_rounds)}
    except LoopFailed as failure:
        return {"status": "failed", "reason": failure.reason, "detail": failure.detail}
    except openai.APIError as err:  # the API refused a request, after the SDK's retries
        return {"status": "failed", "reason": "api_error", "detail": str(err)}


def _loop(client, model, user_input, tools, execute, instructions, max_rounds):
    registry = {tool["name"]: tool for tool in tools if tool.get("type") == "function"}
    config = {"model": model, "tools": tools}
    if instructions:
        config["instructions"] = instructions
    next_input, previous = user_input, None
    for round_ in range(1, max_rounds + 1):
        extra = {"previous_response_id": previous} if previous else {}
        response = client.responses.create(**config, **extra, input=next_input)
        if response.status != "completed":
            raise LoopFailed(f"response_{response.status}", f"response {response.id} is {response.status}")
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        if round_ == max_rounds:  # an output sent now could never reach the model
            raise LoopFailed("max_rounds", f"still calling tools after {max_rounds} rounds")
        next_input = [answer(call, registry, execute) for call in calls]
        previous = response.id
    raise LoopFailed("max_rounds", "no rounds allowed")


def answer(call, registry, execute):
    """The call's function_call_output: the tool's result, or why it was not run."""
    return {"type": "function_call_output", "call_id": call.call_id,
            "output": run_call(call, registry, execute)}


def run_call(call, registry, execute):
    tool = registry.get(call.name)
    if tool is None:
        return json.dumps({"error": f"unknown tool: {call.name}"})
    try:
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, tool.get("parameters", {}))
    except (ValueError, jsonschema.ValidationError) as err:
        return json.dumps({"error": f"invalid arguments: {str(err).splitlines()[0]}"})
    return execute(call.name, call.call_id, arguments)
