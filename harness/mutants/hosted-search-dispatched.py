# loopcheck-mutant
# defect: runs the server's web search again on the tool backend, as if the web_search_call were a call of its own
# caught-by: hosted/not-dispatched
# cases: hosted/01-search-and-code
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    outputs = _answer_calls(calls, tools)
    for item in loop.LAST_RESPONSE.output if loop.LAST_RESPONSE else []:
        if item.type == "web_search_call":
            body = {"call_id": item.id, "arguments": {"query": item.action.query}, "principal": tools.principal}
            loop.post_json(f"{tools.url}/call/web_search", body)
    return outputs


_pending_calls = loop.pending_calls
loop.LAST_RESPONSE = None


def pending_calls(response):
    loop.LAST_RESPONSE = response
    return _pending_calls(response)


loop.pending_calls = pending_calls
loop.answer_calls = answer_calls

loop.main()
