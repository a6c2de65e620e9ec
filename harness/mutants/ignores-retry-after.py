# loopcheck-mutant
# defect: retries after a fixed 20 ms whatever retry-after(-ms) the server asked for
# caught-by: transport/retry-after-honoured
# cases: transport/03-429-retry-after
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


class FixedBackoff(loop.openai.OpenAI):
    def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):
        return 0.02


loop.make_client = lambda: FixedBackoff(max_retries=2)

loop.main()
