"""The support loop against three catalogue cases, each through its own loopcheck session.

Run: pip install loopcheck && pytest harness/python/examples
(the plugin starts the binary its package installed).
"""

import json

import pytest
from openai import OpenAI

import support_loop

CASES = ["correlation/01-single-call", "correlation/02-call-id-distinct", "dispatch/01-unknown-tool"]


def fixture_tools(session):
    """The application's tools, pointed at the session's fixture backend."""

    def execute(name, call_id, arguments):
        status, answer = session.call_tool(name, call_id, arguments, principal=session.task["principal"])
        if status == 200:
            return json.dumps(answer["result"])
        return json.dumps({"error": answer["error"]["message"]})

    return execute


def run_session(session):
    """The application's loop on the session's task, against its fake API and tools."""
    task = session.task
    # Looked up on the module, so a test can swap a piece of the loop.
    return support_loop.run_support_loop(
        OpenAI(base_url=session.base_url, api_key=session.api_key),
        model=task["model"],
        user_input=task["input"],
        tools=task["tools"],
        instructions=task.get("instructions"),
        max_rounds=task["max_rounds"],
        execute=fixture_tools(session),
    )


@pytest.mark.loopcheck(cases=CASES, supports=["previous_response_id"])
def test_support_loop_conforms(loopcheck_session):
    loopcheck_session.assert_conforms(run_session(loopcheck_session))
