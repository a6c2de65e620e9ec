// loopcheck-mutant
// defect: answers each call under its `fc_` item id (`call.id`) instead of its `call_id`
// caught-by: call-id/own-id
// cases: correlation/02-call-id-distinct
// supports: previous_response_id,stateless
import { impl, main } from '../node/loop.mjs';

impl.outputItem = (call, output) => ({ type: 'function_call_output', call_id: call.id, output });

await main();
