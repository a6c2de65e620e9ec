// loopcheck-mutant
// defect: previous_response_id is set from the first response only (`??=`), so later rounds chain to a stale response
// caught-by: state/chained
// cases: correlation/06-three-rounds
// supports: previous_response_id
import { impl, main } from '../node/loop.mjs';

impl.advance = (state, response, outputs) => {
  state.newItems = outputs;
  state.previousResponseId ??= response.id;
};

await main();
