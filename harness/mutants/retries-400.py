# loopcheck-mutant
# defect: retries every failed model request, client errors (400) included
# caught-by: transport/no-retry-4xx
# cases: transport/02-400-not-retried
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_create = loop.create


def create(client, kwargs, stream):
    for attempt in range(3):
        try:
            return _create(client, kwargs, stream)
        except loop.openai.APIStatusError as err:
            if attempt == 2:
                raise
            loop.log(f"HTTP {err.status_code}, retrying")
            loop.time.sleep(0.1)


loop.create = create

loop.main()
