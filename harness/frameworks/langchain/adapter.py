"""loopcheck contract adapter for LangChain (`langchain.agents.create_agent`) with
`langchain_openai.ChatOpenAI` on the Responses API (docs/contract.md).

The adapter only maps the task onto the framework and leaves the loop to it: the agent
graph decides what to send, which calls to run and when to stop. It adds no validation,
retry or budget logic of its own, so what loopcheck judges is LangChain's behaviour with
its defaults. The only settings it passes are the ones the task dictates:

- `use_responses_api=True`, the model, the fake API's URL and key;
- the state mode: `use_previous_response_id=True` for `previous_response_id`,
  `store=False` for `stateless` (LangChain replays the whole history by default);
- `streaming=True` when the task streams;
- the turn limit: LangGraph's `recursion_limit`, in graph steps (see `recursion_limit`).

Each task tool becomes one `StructuredTool` whose `args_schema` is the task's raw JSON
schema; its body asks the approver first for an approval-required tool and posts the
call to the fixture backend under the call_id LangChain injects through `ToolRuntime`.
"""

import json
import os
import pathlib
import sys

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
import openai
from openai.types.responses import ResponseError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import contract  # noqa: E402  (harness/frameworks/contract.py)


def make_tool(spec, task):
    """One LangChain tool for one task tool, declared from the task's raw JSON schema."""
    name = spec["name"]

    def run_on_backend(runtime: ToolRuntime, **arguments):
        outcome, value = contract.run_call(task, name, runtime.tool_call_id, arguments)
        if outcome == "error":
            # ToolException is LangChain's own type for a tool that failed; what happens to
            # it (relayed to the model or ending the run) is the framework's default.
            raise ToolException(value)
        return json.dumps(value) if outcome == "result" else value

    return StructuredTool.from_function(
        func=run_on_backend,
        name=name,
        description=spec.get("description") or "",
        args_schema=spec.get("parameters") or {"type": "object", "properties": {}},
        # `defer_loading` (hidden until a tool search loads it) is a provider field that
        # ChatOpenAI passes through from a tool's `extras`.
        extras={"defer_loading": True} if spec.get("defer_loading") else None,
    )


def recursion_limit(max_rounds):
    """LangGraph counts graph steps, not model requests: a round of `create_agent` is a
    model step then a tools step, so N model requests take 2N - 1 steps, and the graph
    stops with GraphRecursionError before the tools step that would follow the last one."""
    return 2 * max_rounds - 1


def first_messages(task_input):
    if isinstance(task_input, str):
        return [HumanMessage(task_input)]
    return list(task_input)  # role/content dicts; LangChain converts them itself


def run_case(task):
    state = task["state"]
    settings = {}
    if state == "previous_response_id":
        settings["use_previous_response_id"] = True
    elif state == "stateless":
        settings["store"] = False
    else:
        return {"status": "failed", "reason": "unsupported", "detail": f"state {state}"}
    if task.get("stream"):
        settings["streaming"] = True
    model = ChatOpenAI(
        model=task["model"],
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        use_responses_api=True,
        **settings,
    )
    # A function tool becomes a StructuredTool; a hosted tool (web_search, mcp, ...) goes in
    # as its dict, which `create_agent` passes to the model as a built-in provider tool.
    tools = [make_tool(spec, task) if spec.get("type") == "function" else spec for spec in task["tools"]]
    agent = create_agent(model, tools, system_prompt=task.get("instructions"))
    result = agent.invoke(
        {"messages": first_messages(task["input"])},
        config={"recursion_limit": recursion_limit(task["max_rounds"])},
    )
    last = result["messages"][-1]
    contract.log(f"final message: {last!r}")
    # LangChain's `.text` joins the final AIMessage's text blocks.
    return {"status": "completed", "output_text": str(last.text)}


def failure(err):
    """The result line for an exception the framework raised."""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, GraphRecursionError):
        return {"status": "failed", "reason": "max_rounds", "detail": str(err)}
    if isinstance(err, openai.APIError):
        return {"status": "failed", "reason": "api_error", "detail": detail}
    if isinstance(err, ValueError) and err.args and isinstance(err.args[0], ResponseError):
        # langchain-openai raises a bare ValueError for a failed response (and for a
        # stream's error event); only the non-streamed one carries the SDK's typed error.
        return {"status": "failed", "reason": "response_failed", "detail": str(err)}
    if isinstance(err, ToolException):
        return {"status": "failed", "reason": "tool_error", "detail": str(err)}
    return {"status": "failed", "reason": "error", "detail": detail}


if __name__ == "__main__":
    contract.serve(run_case, failure)
