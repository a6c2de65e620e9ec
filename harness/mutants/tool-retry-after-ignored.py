# loopcheck-mutant
# defect: retries a rate-limited tool call after a fixed 50 ms whatever retry-after(-ms) the tool backend asked for
# caught-by: effects/tool-retry-spaced
# cases: effects/02-tool-rate-limited
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.retry_wait = staticmethod(lambda headers: 0.05)

loop.main()
