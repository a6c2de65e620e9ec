// loopcheck-mutant
// defect: SDK retries are off and a 5xx on a request redoes the whole round: the previous response's tool calls run again before the resend
// caught-by: effects/at-most-once
// cases: transport/07-retry-after-tools-ran
// supports: previous_response_id,stateless
import { readFileSync } from 'node:fs';
import { impl, main } from '../node/loop.mjs';

const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
const tools = impl.makeTools(task, process.env.LOOPCHECK_TOOLS_URL);
const send = impl.send;
let lastCalls = []; // the calls of the latest response, to redo the round with

impl.send = async (client, body) => {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await send(client.withOptions({ maxRetries: 0 }), body);
      lastCalls = response.output.filter((item) => item.type === 'function_call');
      return response;
    } catch (err) {
      if (!(err?.status >= 500) || attempt === 3) throw err;
      // "The round failed, so do it again": execute the calls anew and rebuild their outputs.
      const fresh = new Map((await impl.answerCalls(tools, lastCalls)).map((item) => [item.call_id, item]));
      const input = body.input.map((item) => (item.type === 'function_call_output' && fresh.get(item.call_id)) || item);
      body = { ...body, input };
    }
  }
};

await main();
