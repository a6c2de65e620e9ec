# loopcheck-mutant
# defect: uses the queued snapshot a background create returns instead of polling it to a terminal status
# caught-by: background/polled-to-terminal
# cases: background/01-polling
# supports: previous_response_id,background

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.poll = lambda client, response: response

loop.main()
