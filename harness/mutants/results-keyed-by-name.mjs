// loopcheck-mutant
// defect: runs the calls with Promise.all and stores each result under the tool's name, so parallel calls to one tool all get the last result
// caught-by: call-id/result-matches
// cases: correlation/05-parallel-same-tool
// supports: previous_response_id,stateless
import { impl, main } from '../node/loop.mjs';

impl.answerCalls = async (tools, calls) => {
  const results = {};
  await Promise.all(calls.map(async (call) => {
    results[call.name] = await impl.handleCall(tools, call);
  }));
  return calls.map((call) => impl.outputItem(call, results[call.name]));
};

await main();
