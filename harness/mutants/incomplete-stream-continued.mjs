// loopcheck-mutant
// defect: runs each streamed call at its output_item.done, then takes a stream that ends response.incomplete as completed and sends the calls' outputs on
// caught-by: terminal/stopped-at-answer
// cases: stream/10-incomplete-after-whole-call
// supports: previous_response_id,stateless,stream
import { readFileSync } from 'node:fs';
import { TERMINAL_EVENTS, checked, impl, main } from '../node/loop.mjs';

const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
const tools = impl.makeTools(task, process.env.LOOPCHECK_TOOLS_URL);
const early = new Map(); // call_id -> the output computed at its output_item.done

impl.streamResponse = async (client, body) => {
  const { tools: _, ...params } = body;
  const stream = client.responses.stream(params, { body: { ...body, stream: true } });
  // "Start each tool as soon as its call is done, to save latency" (allowed), and keep
  // the outputs whatever the stream's ending turns out to be (the defect).
  stream.on('response.output_item.done', (event) => {
    if (event.item.type === 'function_call') early.set(event.item.call_id, impl.handleCall(tools, event.item));
  });
  for await (const event of stream) {
    if (TERMINAL_EVENTS.has(event.type)) return checked(event.response);
  }
  throw new Error('the stream ended before a terminal event');
};

const checkStatus = impl.checkStatus;
// "The calls already ran, so the work is done": an incomplete response goes on like a completed one.
impl.checkStatus = (response) => checkStatus(response.status === 'incomplete' ? { ...response, status: 'completed' } : response);

impl.answerCalls = async (_tools, calls) => {
  const outputs = [];
  for (const call of calls) {
    const output = await (early.get(call.call_id) ?? impl.handleCall(tools, call));
    outputs.push(impl.outputItem(call, output));
  }
  return outputs;
};

await main();
