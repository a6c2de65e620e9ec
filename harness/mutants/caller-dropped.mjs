// loopcheck-mutant
// defect: function_call_output items never carry the call's `caller`, so a program's child outputs lose it
// caught-by: program/caller-echoed
// cases: program/01-one-pause
// supports: previous_response_id,stateless,programmatic
import { impl, main } from '../node/loop.mjs';

impl.outputItem = (call, output) => ({ type: 'function_call_output', call_id: call.call_id, output });

await main();
