// loopcheck-mutant
// defect: any response with a message is taken as the final answer, even while function calls arrive beside it
// caught-by: terminal/calls-beside-message
// cases: terminal/01-message-beside-calls
// supports: previous_response_id,stateless
import { impl, main } from '../node/loop.mjs';

const isFinal = impl.isFinal;
impl.isFinal = (response) => response.output.some((item) => item.type === 'message') || isFinal(response);

await main();
