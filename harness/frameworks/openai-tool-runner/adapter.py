"""loopcheck contract adapter for the OpenAI Python SDK's own Responses tool runner
(`openai.lib.responses_tool_runner.ResponsesToolRunner`, package `openai`).

It maps the task onto the runner with the runner's defaults and adds no validation, retry
or budget logic of its own: the point is to judge the runner's loop. One
`RegisteredFunction` per task function tool, whose `tool` is the task's definition as
given (the runner sends it unchanged) and whose `execute` only POSTs to the fixture
backend (after asking the approver for an approval-required tool). The task's hosted
tools go in the request parameters' `tools`, where the runner takes its declared server
tools. `ResponsesToolRunner.iterate` drives the loop on a plain `openai.OpenAI()` client
with `max_steps=max_rounds` and `stream=` the task's `stream`; MCP approval requests go
to the approver through the runner's `approve_mcp` callback.

The runner hands `execute` only the parsed arguments, not the call's `call_id`, which the
backend needs. `iterate` yields each turn's response before its calls run, in response
order, one at a time (the runner's default, `independent=False`), so the adapter takes
each function call's `call_id` from that response in the same order.

State: the runner always replays the whole history itself (it refuses
`previous_response_id`, `conversation` and `background` in its parameters) and adds
`reasoning.encrypted_content` to `include`; `stateless` is that replay with `store=False`.
"""

import collections
import json
import pathlib
import sys

import openai
from openai.lib.responses_tool_runner import (
    RegisteredFunction,
    ResponsesToolRunner,
    ToolRunnerError,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def make_function(spec, task, call_ids):
    """A RegisteredFunction whose body is the fixture backend. No checks of its own: the
    arguments go to the backend as the runner hands them over."""
    name = spec["name"]

    def execute(arguments):
        # The runner executes one call at a time, in response order: this call is the
        # first of this name not yet run in the turn `iterate` just yielded.
        call_id = call_ids[name].popleft()
        outcome, value = contract.run_call(task, name, call_id, arguments)
        if outcome == "result":
            # A function result is text (or a list of input blocks): the backend's result
            # goes back JSON-encoded, as the Responses API expects.
            return json.dumps(value)
        # An error or a refusal goes back as the call's output text (raising would stop
        # the whole run: `iterate` turns any exception into a ToolRunnerError).
        return value

    return RegisteredFunction(tool=spec, execute=execute)


def approve_mcp(task, request):
    """The runner's callback for an `mcp_approval_request`: it answers with the boolean
    only (its `mcp_approval_response` has no field for a reason)."""
    try:
        arguments = json.loads(request.arguments)
    except ValueError:
        arguments = request.arguments
    body = {
        "call_id": request.id,
        "name": request.name,
        "arguments": arguments,
        "server_label": request.server_label,
        "principal": task["principal"],
    }
    _, text = contract.post_json(f"{contract.tools_url()}/approvals", body)
    return contract.parse_object(text).get("approved") is True


def run_case(task):
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    call_ids = collections.defaultdict(collections.deque)
    functions = [make_function(spec, task, call_ids) for spec in task["tools"] if spec.get("type") == "function"]
    params = {
        "model": task["model"],
        "input": task["input"],
        "tools": [spec for spec in task["tools"] if spec.get("type") != "function"],
    }
    if task.get("instructions") is not None:
        params["instructions"] = task["instructions"]
    if task.get("include"):
        params["include"] = task["include"]
    if task["state"] == "stateless":
        params["store"] = False
    runner = ResponsesToolRunner(functions=functions)
    turns = runner.iterate(
        client,
        params,
        max_steps=task["max_rounds"],
        stream=bool(task.get("stream")),
        approve_mcp=lambda request: approve_mcp(task, request),
    )
    try:
        for turn in turns:
            if turn.final:
                return result_of(turn.response)
            call_ids.clear()
            for item in turn.response.output:
                if item.type == "function_call":
                    call_ids[item.name].append(item.call_id)
    finally:
        turns.close()
    raise AssertionError("the runner ended without a final turn")


def result_of(response):
    """The result line of the runner's final response."""
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "refusal":
                    return {"status": "failed", "reason": "refusal", "detail": part.refusal}
    return {"status": "completed", "output_text": response.output_text}


def failure(err):
    """The result line for an exception the runner raised."""
    detail = f"{type(err).__name__}: {err}"
    # The runner raises `ToolRunnerError` for every stop, with a message only; what it
    # wrapped (an API error, say) is in the exception's context chain.
    cause, chain = err, []
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__context__
    cause = next((e for e in chain if not isinstance(e, ToolRunnerError)), None)
    if isinstance(cause, openai.APIError):
        reason = "api_error"
        detail += f" ({type(cause).__name__}: {cause})"
    elif str(err) == "Tool run reached max_steps before completion.":
        reason = "max_rounds"
    elif isinstance(err, ToolRunnerError):
        reason = "tool_runner_error"
        if cause is not None:
            detail += f" ({type(cause).__name__}: {cause})"
    else:
        reason = f"framework_error {type(err).__name__}"
    return {"status": "failed", "reason": reason, "detail": detail}


def main():
    contract.serve(run_case, failure)


if __name__ == "__main__":
    main()
