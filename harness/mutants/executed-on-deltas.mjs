// loopcheck-mutant
// defect: runs a streamed call as soon as its accumulated argument deltas parse as JSON, before the call's output_item.done
// caught-by: stream/executed-after-done
// cases: stream/03-delayed-call-executed-after-done
// supports: previous_response_id,stateless,stream
import { readFileSync } from 'node:fs';
import { TERMINAL_EVENTS, checked, impl, main } from '../node/loop.mjs';

const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
const tools = impl.makeTools(task, process.env.LOOPCHECK_TOOLS_URL);

impl.streamResponse = async (client, body) => {
  const { tools: _, ...params } = body;
  const stream = client.responses.stream(params, { body: { ...body, stream: true } });
  const started = new Map(); // item id -> the function_call item from output_item.added
  stream.on('response.output_item.added', (event) => {
    if (event.item.type === 'function_call') started.set(event.item.id, event.item);
  });
  // "Start the tool early to save latency": fire once the arguments so far are valid JSON.
  stream.on('response.function_call_arguments.delta', (event) => {
    const call = started.get(event.item_id);
    if (!call || call.started) return;
    try {
      JSON.parse(event.snapshot);
    } catch {
      return;
    }
    call.started = true;
    void impl.handleCall(tools, { ...call, arguments: event.snapshot });
  });
  for await (const event of stream) {
    if (TERMINAL_EVENTS.has(event.type)) return checked(event.response);
  }
  throw new Error('the stream ended before a terminal event');
};

await main();
