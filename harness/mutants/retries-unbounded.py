# loopcheck-mutant
# defect: retries a failing model request far too often (max_retries=10, quick backoff) against an API that is down
# caught-by: transport/retry-bounded
# cases: transport/06-persistent-500
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


class Persistent(loop.openai.OpenAI):
    def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):
        return 0.02


loop.make_client = lambda: Persistent(max_retries=10)

loop.main()
