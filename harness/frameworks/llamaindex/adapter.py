"""loopcheck contract adapter for LlamaIndex (`llama-index-core`, `llama-index-llms-openai`).

It maps the task onto the framework with the framework's defaults and adds no validation,
retry or budget logic of its own: the point is to judge the framework's loop. The agent is
`llama_index.core.agent.workflow.FunctionAgent` over `llama_index.llms.openai.OpenAIResponses`
(the Responses API client), pointed at the fake server's URL and key. The agent's workflow
decides what to send, which calls to run and when to stop; `max_iterations` (its turn
limit, passed to `run`) is the task's `max_rounds`.

Each task function tool becomes one `FunctionTool` whose `fn_schema` reports the task's raw
JSON schema; its body asks the approver first for an approval-required tool and posts the
call to the fixture backend, and returns the backend's result JSON-encoded, or the error or
refusal text as the tool's output (a tool's return value is what the model sees). Hosted
tools go in as `OpenAIResponses(built_in_tools=[...])`, as the integration documents them.

State modes map onto the LLM's own settings: `previous_response_id` is
`track_previous_responses=True` (which also turns `store` on), `stateless` is the default
(`store=False`) with the encrypted reasoning included. The task's instructions are the
agent's `system_prompt`; `strict` is the LLM's `strict` when every task tool is strict
(an omitted `strict` counts as strict, as on the API);
`streaming` is the agent's `streaming` flag, set from the task.
"""

import asyncio
import json
import os
import pathlib
import sys

import httpx
import openai
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow.errors import WorkflowRuntimeError
from llama_index.llms.openai import OpenAIResponses
from workflows.runtime.types.step_function import StepWorkerStateContextVar

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def schema_model(name, parameters):
    """A pydantic model that reports the task's JSON schema as its own: `FunctionTool`
    takes a tool's schema only as a pydantic model (`fn_schema`)."""

    class Schema(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args, **kwargs):
            return json.loads(json.dumps(parameters))

    Schema.__name__ = name
    return Schema


def current_call_id():
    """The model's call_id of the call being run. `FunctionTool` hands its function the
    arguments only; the agent runs each call in its own `call_tool` step, whose event (a
    `ToolCall`) carries the call's `tool_id`, and the workflow runtime keeps the running
    step's event in a context variable."""
    return StepWorkerStateContextVar.get().event.tool_id


def make_tool(spec, task):
    """A FunctionTool whose body is the fixture backend. No checks of its own: the
    arguments go to the backend as the framework hands them over."""
    name = spec["name"]

    async def run_on_backend(**arguments):
        outcome, value = await asyncio.to_thread(
            contract.run_call, task, name, current_call_id(), arguments
        )
        # The return value is the tool's output for the model: the result JSON-encoded, or
        # the backend's error answer / the approver's refusal as text.
        return json.dumps(value) if outcome == "result" else value

    return FunctionTool.from_defaults(
        async_fn=run_on_backend,
        name=name,
        description=spec.get("description") or "",
        fn_schema=schema_model(name, spec.get("parameters") or {"type": "object", "properties": {}}),
    )


def chat_history(task_input):
    if isinstance(task_input, str):
        return [ChatMessage(role="user", content=task_input)]
    return [ChatMessage(role=m["role"], content=m["content"]) for m in task_input]


async def run_case(task):
    state = task["state"]
    functions = [spec for spec in task["tools"] if spec.get("type") == "function"]
    hosted = [spec for spec in task["tools"] if spec.get("type") != "function"]
    settings = {}
    if state == "previous_response_id":
        settings["track_previous_responses"] = True
    elif state == "stateless":
        settings["store"] = False
        settings["include"] = ["reasoning.encrypted_content"]
    else:
        return {"status": "failed", "reason": "unsupported", "detail": f"state {state}"}
    if functions and all(spec.get("strict", True) for spec in functions):
        settings["strict"] = True  # an omitted `strict` is strict on the Responses API
    llm = OpenAIResponses(
        model=task["model"],
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        built_in_tools=hosted or None,
        **settings,
    )
    agent = FunctionAgent(
        tools=[make_tool(spec, task) for spec in functions],
        llm=llm,
        system_prompt=task.get("instructions"),
        streaming=bool(task.get("stream")),
    )
    handler = agent.run(chat_history=chat_history(task["input"]), max_iterations=task["max_rounds"])
    if task.get("stream"):
        async for _ in handler.stream_events():
            pass
    result = await handler
    contract.log(f"final response: {result.response!r}")
    return {"status": "completed", "output_text": result.response.content or ""}


def failure(err):
    """The result line for an exception the framework raised."""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, WorkflowRuntimeError) and "Max iterations" in str(err):
        reason = "max_rounds"
    elif isinstance(err, (openai.APIError, httpx.TransportError)):
        # A stream cut short surfaces as httpx's own error, which the SDK does not wrap.
        reason = "api_error"
    else:
        reason = f"framework_error {type(err).__name__}"
    return {"status": "failed", "reason": reason, "detail": detail}


if __name__ == "__main__":
    contract.serve(lambda task: asyncio.run(run_case(task)), failure)
