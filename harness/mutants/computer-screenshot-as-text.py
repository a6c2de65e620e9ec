# loopcheck-mutant
# defect: sends a computer_call_output whose output is the backend's result as JSON text, as for a function call, instead of a computer_screenshot
# caught-by: wire/accepted
# cases: computer/01-screenshot-answered
# supports: previous_response_id, computer

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_computer = loop.Tools.handle_computer


def handle_computer(self, call):
    item = reference_handle_computer(self, call)
    screenshot = {k: v for k, v in item["output"].items() if k != "type"}
    item["output"] = json.dumps(screenshot)
    return item


loop.Tools.handle_computer = handle_computer

loop.main()
