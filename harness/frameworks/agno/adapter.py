"""loopcheck contract adapter for Agno (`agno`), on `agno.models.openai.OpenAIResponses`.

It maps the task onto the framework with the framework's defaults and adds no validation,
retry or budget logic of its own: the point is to judge the framework's loop. The
framework's `Agent.run` drives the loop (`Agent.run(stream=True)` when the task streams),
with the task's instructions as the agent's `instructions` and the model client pointed at
the fake server (`base_url`, `api_key` from the environment).

One `agno.tools.function.Function` per task tool, built from the task's raw JSON schema
the way Agno builds its own MCP tools (`parameters=` the schema, an `entrypoint`, and
`skip_entrypoint_processing=True`, so Agno derives nothing from the Python signature). The
entrypoint only POSTs to the fixture backend (after asking the approver for an
approval-required tool) and returns its answer as the tool's output text: the result
JSON-encoded, or the backend's error or the approver's refusal, as Agno's MCP tools return
a failed call. Agno hands the entrypoint its `FunctionCall` (`fc`), whose `call_id` is the
output item's id (`fc_...`); the model's `call_id` sits beside it on the tool call of the
run's assistant message (`run_context.messages`), where Agno itself reads it to answer
the call, and the entrypoint takes it from there.

State modes map onto `OpenAIResponses`' own settings: `previous_response_id` is its
default (`use_previous_response_id=True` with storage on: it chains reasoning models'
responses), `stateless` is `store=False` (it then replays the context and asks for the
encrypted reasoning); `background=True` when the task runs in the background (the model
class polls). Agno has no limit on model requests (its `tool_call_limit` counts tool
calls, and answers the calls past it with an error instead of stopping), so `max_rounds`
maps onto nothing.
"""

import json
import logging
import os
import pathlib
import sys

from agno.agent import Agent
from agno.models.openai import OpenAIResponses
from agno.run.agent import RunErrorEvent, RunOutput
from agno.run.base import RunStatus
from agno.tools.function import Function

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def model_call_id(fc, run_context):
    """The model's call_id of the call Agno runs as `fc` (whose own id is the item id)."""
    for message in reversed((run_context.messages if run_context else None) or []):
        for tool_call in message.tool_calls or []:
            if tool_call.get("id") == fc.call_id:
                return tool_call.get("call_id") or fc.call_id
    return fc.call_id


def make_tool(spec, task):
    """A Function whose entrypoint is the fixture backend. No checks of its own: the
    arguments go to the backend as the framework hands them over."""
    name = spec["name"]

    def run_on_backend(fc, run_context, **arguments):
        outcome, value = contract.run_call(task, name, model_call_id(fc, run_context), arguments)
        return json.dumps(value) if outcome == "result" else value

    return Function(
        name=name,
        description=spec.get("description"),
        parameters=spec.get("parameters") or {"type": "object", "properties": {}},
        strict=spec.get("strict"),
        entrypoint=run_on_backend,
        skip_entrypoint_processing=True,
    )


def make_tools(task):
    # A function tool becomes a Function; a hosted tool (web_search, mcp, ...) goes in as its
    # dict, which OpenAIResponses sends to the API as it is (`_format_tool_params`).
    return [make_tool(spec, task) if spec.get("type") == "function" else spec for spec in task["tools"]]


def run_case(task):
    settings = {}
    if task["state"] == "stateless":
        settings["store"] = False
    if task.get("background"):
        settings["background"] = True
    model = OpenAIResponses(
        id=task["model"],
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        **settings,
    )
    agent = Agent(
        model=model,
        instructions=task.get("instructions"),
        tools=make_tools(task),
        telemetry=False,  # it would post to Agno's servers after every run
    )
    if task.get("stream"):
        output = None
        for event in agent.run(task["input"], stream=True, yield_run_output=True):
            if isinstance(event, RunOutput):
                output = event
            elif isinstance(event, RunErrorEvent):
                return failure_of(event.content, event.error_type)
    else:
        output = agent.run(task["input"])
    contract.log(f"run status {output.status if output else None}: {output.content if output else None!r}")
    if output is None or output.status == RunStatus.error:
        return failure_of(output.content if output else "no run output", None)
    if output.status != RunStatus.completed:
        return {"status": "failed", "reason": str(output.status.value), "detail": str(output.content)}
    return {"status": "completed", "output_text": output.content or ""}


def failure_of(message, error_type):
    """The result line for a run Agno ended with `RunStatus.error`: its result carries only
    the error's text (and, streamed, the exception's class name), not which failure it was."""
    detail = f"{error_type}: {message}" if error_type else str(message)
    return {"status": "failed", "reason": "error", "detail": detail}


def failure(err):
    """The result line for an exception that escaped the framework."""
    return {"status": "failed", "reason": f"framework_error {type(err).__name__}", "detail": str(err)}


def main():
    # Off a terminal, Agno's loggers write to standard output (`agno.utils.log.build_logger`
    # binds a StreamHandler to sys.stdout), which is the result line's: log to stderr.
    for name in ("agno", "agno-team", "agno-workflow"):
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(sys.stderr)
    contract.serve(run_case, failure)


if __name__ == "__main__":
    main()
