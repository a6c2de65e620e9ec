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
import os
import sys
import urllib.error
import urllib.request

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
from agents.tool import ProgrammaticToolCallingTool


def log(*args):
    print(*args, file=sys.stderr, flush=True)  # stdout is reserved for the result line


def post_json(url, body):
    """POST JSON; (status, body text)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
        return err.code, err.read().decode()


def make_tool(spec, task, tools_url):
    """A FunctionTool whose body is the fixture backend. No checks of its own: the
    arguments go to the backend as the framework hands them over."""
    name = spec["name"]
    needs_approval = name in (task.get("approval_required") or [])

    async def invoke(ctx, arguments_json):
        # The framework passes the model's call_id in its ToolContext.
        body = {
            "call_id": ctx.tool_call_id,
            "arguments": json.loads(arguments_json),
            "principal": task["principal"],
        }
        if needs_approval:
            _, text = await asyncio.to_thread(
                post_json, f"{tools_url}/approvals", {**body, "name": name}
            )
            answer = json.loads(text)
            if not answer.get("approved"):
                return f"approval denied: {answer.get('reason')}"
            body["approval"] = answer["approval"]
        status, text = await asyncio.to_thread(post_json, f"{tools_url}/call/{name}", body)
        if status == 200:
            # FunctionTool's contract asks for a string: a dict would reach the model as its
            # Python repr (ItemHelpers._convert_tool_output calls str()), so the result goes
            # back JSON-encoded, as the Responses API expects.
            return json.dumps(json.loads(text)["result"])
        # FunctionTool's documented way to report a tool error to the model: return it as
        # a string (raising would fail the whole run).
        return text

    kwargs = {}
    if "allowed_callers" in spec:
        kwargs["allowed_callers"] = spec["allowed_callers"]
    return FunctionTool(
        name=name,
        description=spec.get("description", ""),
        params_json_schema=spec.get("parameters") or {"type": "object", "properties": {}},
        on_invoke_tool=invoke,
        strict_json_schema=spec.get("strict", True),
        **kwargs,
    )


def make_tools(task, tools_url):
    tools = []
    for spec in task["tools"]:
        if spec.get("type") == "function":
            tools.append(make_tool(spec, task, tools_url))
        elif spec.get("type") == "programmatic_tool_calling":
            tools.append(ProgrammaticToolCallingTool())
        else:
            raise ValueError(f"no mapping for hosted tool {spec.get('type')!r}")
    return tools


async def run_case(task):
    tools_url = os.environ["LOOPCHECK_TOOLS_URL"].rstrip("/")
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
        tools=make_tools(task, tools_url),
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


def result_for(task):
    try:
        return asyncio.run(run_case(task))
    except Exception as err:
        log(f"framework error: {err!r}")
        return failure(err)


def main():
    set_tracing_disabled(True)  # the tracing exporter would call api.openai.com
    if "LOOPCHECK_TASK" in os.environ:  # one process per case
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            print(json.dumps(result_for(json.load(f))), flush=True)
        return
    # Persistent mode: one case per stdin line, so the framework is imported once per
    # worker; each case builds its own client from that line's environment.
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            os.environ.update(request["env"])
            print(json.dumps(result_for(request["task"])), flush=True)


if __name__ == "__main__":
    main()
