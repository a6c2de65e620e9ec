# loopcheck-mutant
# defect: never streams, whatever the task asks
# caught-by: stream/requested
# cases: stream/01-single-call
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_create = loop.create
loop.create = lambda client, kwargs, stream: _create(client, kwargs, False)

loop.main()
