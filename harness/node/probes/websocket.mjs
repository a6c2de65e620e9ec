// The official Node SDK's WebSocket client (`ResponsesWS`, on the `ws` package) against the
// fake: one tool-call loop over one connection, each turn chained by `previous_response_id`
// with only its new items. Prints one JSON line: the event types of each turn and the final
// text.
//
// Environment: LOOPCHECK_BASE_URL (the fake's `http://127.0.0.1:PORT/v1`), OPENAI_API_KEY.

import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';

const TOOLS = [
  {
    type: 'function',
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    },
  },
];

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete']);

/** Sends one response.create and reads its events up to the terminal one. */
async function turn(events, socket, create) {
  socket.send({ type: 'response.create', model: 'gpt-5', tools: TOOLS, ...create });
  const types = [];
  for (;;) {
    const { value, done } = await events.next();
    if (done) throw new Error('the connection closed before a terminal event');
    if (value.type === 'error') throw new Error(`error: ${value.error?.message ?? value.error}`);
    if (value.type !== 'message') continue;
    const event = value.message;
    types.push(event.type);
    if (event.type === 'error') throw new Error(`error event: ${JSON.stringify(event)}`);
    if (TERMINAL.has(event.type)) return { types, response: event.response };
  }
}

const client = new OpenAI({ baseURL: process.env.LOOPCHECK_BASE_URL, maxRetries: 0 });
const socket = new ResponsesWS(client);
const events = socket.stream();
const turns = [];
let { types, response } = await turn(events, socket, {
  input: [{ role: 'user', content: 'Do I need an umbrella in Lisbon this afternoon?' }],
});
turns.push(types);
for (;;) {
  const calls = response.output.filter((item) => item.type === 'function_call');
  if (calls.length === 0) break;
  const outputs = calls.map((call) => ({
    type: 'function_call_output',
    call_id: call.call_id,
    output: JSON.stringify({ city: JSON.parse(call.arguments).city, condition: 'light rain' }),
  }));
  ({ types, response } = await turn(events, socket, {
    previous_response_id: response.id,
    input: outputs,
  }));
  turns.push(types);
}
socket.close({ code: 1000, reason: 'done' });
const text = response.output
  .filter((item) => item.type === 'message')
  .flatMap((item) => item.content)
  .filter((part) => part.type === 'output_text')
  .map((part) => part.text)
  .join('');
console.log(JSON.stringify({ turns, status: response.status, text }));
