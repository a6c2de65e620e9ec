# loopcheck-mutant
# defect: sends store: true in stateless mode (the replayed context is stored server-side anyway)
# caught-by: state/store-false
# cases: correlation/01-single-call
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config
loop.initial_config = lambda task: {**_initial_config(task), "store": True}

loop.main()
