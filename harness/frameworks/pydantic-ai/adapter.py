"""loopcheck contract adapter for Pydantic AI (`pydantic-ai-slim[openai]`).

It maps the task onto the framework with the framework's defaults and adds no validation,
retry or budget logic of its own: the point is to judge the framework's loop. One
`Tool.from_schema` per task tool, built from the task's raw JSON schema; its body only
POSTs to the fixture backend (after asking the approver for an approval-required tool).
The framework's `Agent.run` drives the loop on `OpenAIResponsesModel` with an
`OpenAIProvider` pointed at the fake server, and `UsageLimits(request_limit=max_rounds)`.

State modes and budgets map onto the framework's own settings: `previous_response_id` is
`openai_previous_response_id='auto'`, `conversation` is `openai_conversation_id`,
`stateless` is its default whole-history replay with `openai_store=False`; `background`
is `openai_background=True` (the framework polls); `stream` runs every model request
through an `event_stream_handler`; `deadline_ms` is `Agent.run(timeout=)`,
`max_tool_calls` is `UsageLimits(tool_calls_limit=)`, `tool_timeout_ms` is
`Agent(tool_timeout=)`.
"""

import asyncio
import os
import pathlib
import sys

import openai
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    OutputTokenLimitExceeded,
    RunTimedOut,
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.capabilities import NativeTool
from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.native_tools import (
    CodeExecutionTool,
    FileSearchTool,
    ImageGenerationTool,
    MCPServerTool,
    WebSearchTool,
)
from pydantic_ai.usage import UsageLimits

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def make_tool(spec, task):
    """A Tool whose body is the fixture backend. No checks of its own: the arguments go to
    the backend as the framework hands them over."""
    name = spec["name"]

    async def call(ctx: RunContext, **arguments):
        # The framework passes the model's call_id in its RunContext.
        outcome, value = await asyncio.to_thread(
            contract.run_call, task, name, ctx.tool_call_id, arguments
        )
        if outcome == "error":
            # The framework's exception for a definitive tool failure the model should see.
            raise ToolFailed(value)
        return value  # a result (the framework serializes it for the model) or a refusal

    tool = Tool.from_schema(
        call,
        name=name,
        description=spec.get("description"),
        json_schema=spec.get("parameters") or {"type": "object", "properties": {}},
        takes_ctx=True,
    )
    if "strict" in spec:  # omitted: the framework's default
        tool.strict = spec["strict"]
    # Hidden until tool search (the `ToolSearch` capability every agent has) loads it;
    # `Tool.from_schema` takes no `defer_loading`, `Tool` has it as an attribute.
    tool.defer_loading = bool(spec.get("defer_loading"))
    return tool


# The hosted tools as the framework documents them: native tools, which the server runs.
NATIVE = {
    "web_search": lambda spec: WebSearchTool(),
    "file_search": lambda spec: FileSearchTool(file_store_ids=spec["vector_store_ids"]),
    "code_interpreter": lambda spec: CodeExecutionTool(),
    "image_generation": lambda spec: ImageGenerationTool(size=spec.get("size")),
    "mcp": lambda spec: MCPServerTool(id=spec["server_label"], url=spec["server_url"]),
}


async def run_case(task):
    provider = OpenAIProvider(
        base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
    )
    settings = OpenAIResponsesModelSettings()
    state = task["state"]
    if state == "stateless":
        settings["openai_store"] = False
    elif state == "previous_response_id":
        settings["openai_previous_response_id"] = "auto"
    elif state == "conversation":
        conversation = await provider.client.conversations.create()
        settings["openai_conversation_id"] = conversation.id
    if task.get("background"):
        settings["openai_background"] = True
    agent_kwargs = {}
    if "tool_timeout_ms" in task:
        agent_kwargs["tool_timeout"] = task["tool_timeout_ms"] / 1000
    agent = Agent(
        OpenAIResponsesModel(task["model"], provider=provider),
        instructions=task.get("instructions"),
        tools=[make_tool(spec, task) for spec in task["tools"] if spec.get("type") == "function"],
        capabilities=[NativeTool(NATIVE[spec["type"]](spec)) for spec in task["tools"] if spec.get("type") in NATIVE],
        model_settings=settings,
        **agent_kwargs,
    )
    run_kwargs = {
        "usage_limits": UsageLimits(
            request_limit=task["max_rounds"], tool_calls_limit=task.get("max_tool_calls")
        )
    }
    if "deadline_ms" in task:
        run_kwargs["timeout"] = task["deadline_ms"] / 1000
    if task.get("stream"):
        async def drain(ctx, events):  # streaming every model request is enough here
            async for _ in events:
                pass

        run_kwargs["event_stream_handler"] = drain
    prompt = task["input"]
    if not isinstance(prompt, str):  # the catalogue's list inputs are one user message
        (message,) = prompt
        prompt = message["content"]
    result = await agent.run(prompt, **run_kwargs)
    return {"status": "completed", "output_text": result.output}


def failure(err):
    """The result line for an exception the framework raised."""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, UsageLimitExceeded):
        reason = "max_tool_calls" if "tool_calls_limit" in str(err) else "max_rounds"
    elif isinstance(err, RunTimedOut):
        reason = "timeout"
    elif isinstance(err, (ModelAPIError, openai.APIError)):
        reason = "api_error"
    elif isinstance(err, ContentFilterError):  # a refusal; its text is in the message
        return {"status": "failed", "reason": "refusal", "detail": err.message}
    elif isinstance(err, OutputTokenLimitExceeded):  # an incomplete response
        reason = "incomplete"
    elif isinstance(err, UnexpectedModelBehavior):
        reason = "unexpected_model_behavior"
    else:
        reason = f"framework_error {type(err).__name__}"
    return {"status": "failed", "reason": reason, "detail": detail}


def main():
    contract.serve(lambda task: asyncio.run(run_case(task)), failure)


if __name__ == "__main__":
    main()
