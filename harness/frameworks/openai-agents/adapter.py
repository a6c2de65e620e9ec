"""loopcheck contract adapter for the OpenAI Agents SDK (`openai-agents`).

It maps the task onto the framework with the framework's defaults and adds no validation,
retry or budget logic of its own: the point is to judge the framework's loop. One
`FunctionTool` per task tool, built from the task's raw JSON schema; its body only POSTs
to the fixture backend (after asking the approver for an approval-required tool). The
framework's `Runner.run` drives the loop on `OpenAIResponsesModel` (its default model
class), with `max_turns` from the task's `max_rounds`.

State modes map onto what the framework offers: `previous_response_id` is
`auto_previous_response_id=True`, `conversation` is `conversation_id=`, `stateless` is the
framework's default whole-history replay with `ModelSettings(store=False)` and the
encrypted reasoning included.
"""

import asyncio
import json
import pathlib
import sys

import openai
from agents import (
    Agent,
    FunctionTool,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from agents.exceptions import (
    MaxTurnsExceeded,
    ModelBehaviorError,
    ModelRefusalError,
    ToolTimeoutError,
)
from agents.tool import (
    CodeInterpreterTool,
    FileSearchTool,
    HostedMCPTool,
    ImageGenerationTool,
    ProgrammaticToolCallingTool,
    ToolSearchTool,
    WebSearchTool,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def make_tool(spec, task):
    """A FunctionTool whose body is the fixture backend. No checks of its own: the
    arguments go to the backend as the framework hands them over."""
    name = spec["name"]

    async def invoke(ctx, arguments_json):
        # A raw FunctionTool gets the model's arguments string: parsing it is the body's
        # job (the backend wants an object). The model's call_id is in the ToolContext.
        arguments = json.loads(arguments_json)
        outcome, value = await asyncio.to_thread(
            contract.run_call, task, name, ctx.tool_call_id, arguments
        )
        if outcome == "result":
            # FunctionTool's contract asks for a string: a dict would reach the model as its
            # Python repr (ItemHelpers._convert_tool_output calls str()), so the result goes
            # back JSON-encoded, as the Responses API expects.
            return json.dumps(value)
        # FunctionTool's documented way to report a tool error to the model: return it as
        # a string (raising would fail the whole run).
        return value

    kwargs = {}
    if "allowed_callers" in spec:
        kwargs["allowed_callers"] = spec["allowed_callers"]
    if "output_schema" in spec:
        kwargs["output_json_schema"] = spec["output_schema"]
    if spec.get("defer_loading"):  # hidden until a tool search loads it
        kwargs["defer_loading"] = True
    return FunctionTool(
        name=name,
        description=spec.get("description", ""),
        params_json_schema=spec.get("parameters") or {"type": "object", "properties": {}},
        on_invoke_tool=invoke,
        strict_json_schema=spec.get("strict", True),
        **kwargs,
    )


# The hosted tools as the SDK's documentation wires them: the server runs them, the
# runner only sends their definitions and replays their items.
HOSTED = {
    "web_search": lambda spec: WebSearchTool(),
    "file_search": lambda spec: FileSearchTool(vector_store_ids=spec["vector_store_ids"]),
    "code_interpreter": lambda spec: CodeInterpreterTool(tool_config=spec),
    "image_generation": lambda spec: ImageGenerationTool(tool_config=spec),
    "mcp": lambda spec: HostedMCPTool(tool_config=spec),
    "tool_search": lambda spec: ToolSearchTool(execution=spec.get("execution")),
}


def make_tools(task):
    tools = []
    for spec in task["tools"]:
        if spec.get("type") == "function":
            tools.append(make_tool(spec, task))
        elif spec.get("type") == "programmatic_tool_calling":
            tools.append(ProgrammaticToolCallingTool())
        elif spec.get("type") in HOSTED:
            tools.append(HOSTED[spec["type"]](spec))
        else:
            raise ValueError(f"no mapping for hosted tool {spec.get('type')!r}")
    return tools


async def run_case(task):
    client = openai.AsyncOpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    state = task["state"]
    settings = ModelSettings()
    run_kwargs = {}
    if state == "stateless":
        settings = ModelSettings(store=False, response_include=["reasoning.encrypted_content"])
    elif state == "previous_response_id":
        run_kwargs["auto_previous_response_id"] = True
    elif state == "conversation":
        run_kwargs["conversation_id"] = (await client.conversations.create()).id
    agent = Agent(
        name="loopcheck",
        instructions=task.get("instructions"),
        model=OpenAIResponsesModel(model=task["model"], openai_client=client),
        model_settings=settings,
        tools=make_tools(task),
    )
    if task.get("stream"):
        result = Runner.run_streamed(agent, task["input"], max_turns=task["max_rounds"], **run_kwargs)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, task["input"], max_turns=task["max_rounds"], **run_kwargs)
    return {"status": "completed", "output_text": result.final_output}


def failure(err):
    """The result line for an exception the framework raised."""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, MaxTurnsExceeded):
        reason = "max_rounds"
    elif isinstance(err, ModelRefusalError):
        return {"status": "failed", "reason": "refusal", "detail": err.refusal}
    elif isinstance(err, ModelBehaviorError):
        # The framework reports a failed or incomplete response only in the message text.
        message = str(err)
        if "status=incomplete" in message:
            reason = "incomplete"
        elif "status=failed" in message:
            reason = "response_failed"
        elif "status=cancelled" in message:
            reason = "cancelled"
        elif "terminal event `error`" in message:  # an error event in the stream
            reason = "api_error"
        else:
            reason = "model_behavior_error"
    elif isinstance(err, openai.APIError):
        reason = "api_error"
    elif isinstance(err, ToolTimeoutError):
        reason = "timeout"
    else:
        reason = f"framework_error {type(err).__name__}"
    return {"status": "failed", "reason": reason, "detail": detail}


def main():
    set_tracing_disabled(True)  # the tracing exporter would call api.openai.com
    contract.serve(lambda task: asyncio.run(run_case(task)), failure)


if __name__ == "__main__":
    main()
