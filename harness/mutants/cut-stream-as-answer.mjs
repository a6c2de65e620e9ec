// loopcheck-mutant
// defect: a stream that dies before its terminal event (cut, or an error event the SDK throws on) is taken as finished, with the text so far as the answer
// caught-by: stream/broken-not-answer
// cases: stream/02-cut-before-terminal, stream/??-error-event-*
// supports: previous_response_id,stateless,stream
import { TERMINAL_EVENTS, checked, impl, main } from '../node/loop.mjs';

impl.streamResponse = async (client, body) => {
  const { tools: _, ...params } = body;
  const stream = client.responses.stream(params, { body: { ...body, stream: true } });
  let id = 'resp_unknown';
  let text = '';
  try {
    for await (const event of stream) {
      if (TERMINAL_EVENTS.has(event.type)) return checked(event.response);
      if (event.type === 'response.created') id = event.response.id;
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
  } catch (err) {
    console.error(`stream broke (${err.message}); keeping what arrived`);
  }
  const content = [{ type: 'output_text', text, annotations: [] }];
  return { id, status: 'completed', output: [{ type: 'message', role: 'assistant', content }] };
};

await main();
