# loopcheck-mutant
# defect: retries a tool call the backend refused (5xx) under a fresh request id instead of its call_id, so the backend cannot tell the retry from a new call
# caught-by: effects/at-most-once
# cases: effects/01-tool-unavailable-then-ok
# supports: previous_response_id

import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_post_json_with_headers = loop.post_json_with_headers
sent = set()


def post_json_with_headers(url, body, timeout=30):
    if "/call/" in url:
        if body["call_id"] in sent:  # a retry: every attempt gets its own id
            body = {**body, "call_id": f"call_{uuid.uuid4().hex[:24]}"}
        sent.add(body["call_id"])
    return _post_json_with_headers(url, body, timeout)


loop.post_json_with_headers = post_json_with_headers

loop.main()
