# loopcheck-mutant
# defect: keeps resending a call the tool backend keeps refusing, 50 times, before it answers the call as failed
# caught-by: effects/tool-retry-bounded
# cases: effects/03-tool-stays-unavailable
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.CALL_ATTEMPTS = 50

loop.main()
