# loopcheck-mutant
# defect: retries every 5xx by status code alone, ignoring an x-should-retry: false header
# caught-by: transport/no-retry-4xx
# cases: transport/08-should-retry-false
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


class StatusOnlyRetries(loop.openai.OpenAI):
    def _should_retry(self, response):
        return response.status_code in (408, 409, 429) or response.status_code >= 500


loop.make_client = lambda: StatusOnlyRetries(max_retries=2)

loop.main()
