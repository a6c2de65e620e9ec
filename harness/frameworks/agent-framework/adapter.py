"""loopcheck contract adapter for Microsoft Agent Framework (`agent-framework-core` with
`agent-framework-openai`).

It maps the task onto the framework with the framework's defaults and adds no validation,
retry or budget logic of its own: the point is to judge the framework's loop. An `Agent`
over `OpenAIChatClient` (the framework's OpenAI Responses API client), with the task's
model, `OPENAI_BASE_URL` and `OPENAI_API_KEY`, and the turn limit
`function_invocation_configuration={"max_iterations": max_rounds}` (the framework's limit
on model round trips). One `FunctionTool` per task tool, its `input_model` the task's raw
JSON schema; its body only POSTs to the fixture backend (after asking the approver for an
approval-required tool) and returns the backend's result, error or refusal as text. The
model's call_id reaches a tool through the `FunctionInvocationContext` metadata, which the
framework fills only on its function-middleware path, so the agent gets one pass-through
function middleware that does nothing else. Hosted tools are built with the client's
`get_*_tool` helpers; any other hosted definition is passed as a dict, which the client
forwards unchanged.

State modes map onto what the framework offers: `previous_response_id` is its default
(the client chains each request to the last response id), `stateless` is
`options={"store": False}` (the function loop then replays the whole history), and
`conversation` is a session continuing a conversation created with the client's
`AsyncOpenAI` (`agent.get_session(conv_id)`). `stream` is `agent.run(stream=True)`.
Budgets are the function-invocation limits: `max_tool_calls` is `max_function_calls`,
`deadline_ms` is `max_duration_seconds` (the framework has no per-tool timeout).
`text_format` is `options={"response_format": <the task's format>}`, and the answer is
checked by reading `AgentResponse.value`, the framework's structured-output parse.
"""

import asyncio
import os
import pathlib
import sys

from agent_framework import Agent, FunctionInvocationContext, FunctionTool, Message
from agent_framework.exceptions import ChatClientException
from agent_framework.openai import OpenAIChatClient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def make_tool(spec, task):
    """A FunctionTool whose body is the fixture backend. No checks of its own: the
    arguments go to the backend as the framework hands them over."""
    name = spec["name"]

    async def invoke(ctx: FunctionInvocationContext, **arguments):
        _, value = await asyncio.to_thread(
            contract.run_call, task, name, ctx.metadata.get("call_id"), arguments
        )
        # A result is serialized for the model by the framework (FunctionTool.parse_result);
        # an error or a refusal goes back as the tool's text, since a raised exception
        # would reach the model as "Error: Function failed." without its message (the
        # default include_detailed_errors=False).
        return value

    return FunctionTool(
        name=name,
        description=spec.get("description", ""),
        func=invoke,
        input_model=spec.get("parameters") or {"type": "object", "properties": {}},
    )


async def pass_through(context: FunctionInvocationContext, call_next):
    """Function middleware that only continues: with one, the framework puts the call's
    `call_id` into `context.metadata`, which the tool body reads."""
    await call_next()


# The hosted tools as the framework documents them: the client's helpers, which return
# the Responses API definitions; the server runs them.
HOSTED = {
    "web_search": lambda spec: OpenAIChatClient.get_web_search_tool(),
    "file_search": lambda spec: OpenAIChatClient.get_file_search_tool(vector_store_ids=spec["vector_store_ids"]),
    "code_interpreter": lambda spec: OpenAIChatClient.get_code_interpreter_tool(),
    "image_generation": lambda spec: OpenAIChatClient.get_image_generation_tool(size=spec.get("size")),
    "mcp": lambda spec: OpenAIChatClient.get_mcp_tool(
        name=spec["server_label"],
        url=spec["server_url"],
        approval_mode="always_require" if spec.get("require_approval") == "always" else "never_require",
    ),
}


def make_tools(task):
    tools = []
    for spec in task["tools"]:
        kind = spec.get("type")
        if kind == "function":
            tools.append(make_tool(spec, task))
        elif kind in HOSTED:
            tools.append(HOSTED[kind](spec))
        else:  # no helper: a dict tool goes to the API unchanged
            tools.append(dict(spec))
    return tools


def make_input(task):
    """The task's input as the framework's messages (a string stays a string)."""
    value = task["input"]
    if isinstance(value, str):
        return value
    return [Message(item["role"], [item["content"]]) for item in value]


async def run_case(task):
    limits = {"max_iterations": task["max_rounds"]}
    if "max_tool_calls" in task:
        limits["max_function_calls"] = task["max_tool_calls"]
    if "deadline_ms" in task:
        limits["max_duration_seconds"] = task["deadline_ms"] / 1000
    client = OpenAIChatClient(
        model=task["model"],
        api_key=os.environ["OPENAI_API_KEY"],
        base_url=os.environ["OPENAI_BASE_URL"],
        function_invocation_configuration=limits,
    )
    agent = Agent(
        client=client,
        instructions=task.get("instructions"),
        name="loopcheck",
        tools=make_tools(task),
        middleware=[pass_through],
    )
    options = {}
    session = None
    state = task["state"]
    if "text_format" in task:  # a mapping is sent as the request's text.format
        options["response_format"] = task["text_format"]
    if state == "stateless":
        options["store"] = False
    elif state == "conversation":
        conversation = await client.client.conversations.create()
        session = agent.get_session(conversation.id)
    if task.get("stream"):
        stream = agent.run(make_input(task), stream=True, session=session, options=options)
        async for _ in stream:
            pass
        response = await stream.get_final_response()
    else:
        response = await agent.run(make_input(task), session=session, options=options)
    if "text_format" in task:
        response.value  # the framework's structured-output parse; raises on a non-JSON answer
    return {"status": "completed", "output_text": response.text}


def failure(err):
    """The result line for an exception the framework raised."""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, ChatClientException):
        # The client wraps the openai SDK's errors (ChatClientException and subclasses).
        reason = "api_error"
    elif isinstance(err, ValueError) and "not valid JSON" in str(err):  # AgentResponse.value
        reason = "invalid_output"
    else:
        reason = f"framework_error {type(err).__name__}"
    return {"status": "failed", "reason": reason, "detail": detail}


def main():
    contract.serve(lambda task: asyncio.run(run_case(task)), failure)


if __name__ == "__main__":
    main()
