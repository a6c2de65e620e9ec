# loopcheck-mutant
# defect: SDK retries are off and its own retry after a 5xx appends the tool outputs again, so the resend answers each call twice
# caught-by: wire/accepted
# cases: regressions/02-output-resent-on-retry
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_create = loop.create
loop.make_client = lambda: loop.openai.OpenAI(max_retries=0)


def create(client, kwargs, stream):
    for attempt in range(3):
        try:
            return _create(client, kwargs, stream)
        except loop.openai.InternalServerError:
            if attempt == 2:
                raise
            # "Make sure the results get there": the outputs are appended once more.
            input_ = kwargs["input"]
            outputs = [i for i in input_ if isinstance(i, dict) and i.get("type") == "function_call_output"]
            kwargs = {**kwargs, "input": input_ + outputs}


loop.create = create

loop.main()
