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
import sys
import urllib.error
import urllib.request

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
import openai
from openai.types.responses import ResponseError


def log(*args):
    print(*args, file=sys.stderr, flush=True)  # stdout is reserved for the result line


def post_json(url, body):
    """POST JSON; (status, parsed body or None)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
        status, text = err.code, err.read()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, None


def make_tool(spec, task, tools_url):
    """One LangChain tool for one task tool, declared from the task's raw JSON schema."""
    name = spec["name"]
    needs_approval = name in (task.get("approval_required") or [])

    def run_on_backend(runtime: ToolRuntime, **arguments):
        body = {
            "call_id": runtime.tool_call_id,
            "arguments": arguments,
            "principal": task["principal"],
        }
        if needs_approval:
            status, answer = post_json(f"{tools_url}/approvals", {**body, "name": name})
            answer = answer if isinstance(answer, dict) else {}
            if answer.get("approved") is not True:
                reason = answer.get("reason") or f"approval request failed: HTTP {status}"
                return json.dumps({"error": f"approval denied: {reason}"})
            body["approval"] = answer.get("approval")
        status, answer = post_json(f"{tools_url}/call/{name}", body)
        answer = answer if isinstance(answer, dict) else {}
        if status == 200 and "result" in answer:
            return json.dumps(answer["result"])
        # ToolException is LangChain's own type for a tool that failed; what happens to it
        # (relayed to the model or ending the run) is the framework's default.
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        raise ToolException(
            f"{error.get('code') or f'HTTP {status}'}: {error.get('message') or 'no message'}"
        )

    return StructuredTool.from_function(
        func=run_on_backend,
        name=name,
        description=spec.get("description") or "",
        args_schema=spec.get("parameters") or {"type": "object", "properties": {}},
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


def final_text(message):
    """The final AIMessage's text: LangChain's `.text` joins its text blocks."""
    text = message.text
    return text() if callable(text) else text


def run_case(task):
    tools_url = os.environ["LOOPCHECK_TOOLS_URL"].rstrip("/")
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
    tools = [make_tool(spec, task, tools_url) for spec in task["tools"] if spec.get("type") == "function"]
    agent = create_agent(model, tools, system_prompt=task.get("instructions"))
    try:
        result = agent.invoke(
            {"messages": first_messages(task["input"])},
            config={"recursion_limit": recursion_limit(task["max_rounds"])},
        )
    except GraphRecursionError as err:
        return {"status": "failed", "reason": "max_rounds", "detail": str(err)}
    except openai.APIError as err:
        return {"status": "failed", "reason": "api_error", "detail": f"{type(err).__name__}: {err}"}
    except ValueError as err:
        # langchain-openai raises a bare ValueError for a failed response (and for a
        # stream's error event); only the non-streamed one carries the SDK's typed error.
        if err.args and isinstance(err.args[0], ResponseError):
            return {"status": "failed", "reason": "response_failed", "detail": str(err)}
        log(f"framework error: {err!r}")
        return {"status": "failed", "reason": "error", "detail": f"ValueError: {err}"}
    except ToolException as err:
        return {"status": "failed", "reason": "tool_error", "detail": str(err)}
    except Exception as err:  # noqa: BLE001 - any other framework error still ends in a result line
        log(f"framework error: {err!r}")
        return {"status": "failed", "reason": "error", "detail": f"{type(err).__name__}: {err}"}
    last = result["messages"][-1]
    log(f"final message: {last!r}")
    return {"status": "completed", "output_text": final_text(last)}


def main():
    with open(os.environ["LOOPCHECK_TASK"]) as f:
        print(json.dumps(run_case(json.load(f))), flush=True)


if __name__ == "__main__":
    main()
