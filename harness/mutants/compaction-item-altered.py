# loopcheck-mutant
# defect: rebuilds the compaction item from the compacted output with its encrypted_content trimmed of trailing padding, so it no longer decrypts
# caught-by: compaction/replayed
# cases: compaction/01-compact-stateless
# supports: stateless, stream, compaction

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_compact = loop.compact


def compact(client, config, sent):
    compacted = _compact(client, config, sent)
    for item in compacted:
        if item.get("type") == "compaction":
            item["encrypted_content"] = item["encrypted_content"][:-4]
    return compacted


loop.compact = compact

loop.main()
