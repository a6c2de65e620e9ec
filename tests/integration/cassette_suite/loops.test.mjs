// Two small tool loops on the official SDK, each with a cassette of its own (the vitest
// twin of test_loops.py): the stand-in upstream calls `lookup` twice, then answers
// `done: <topic>`. With LOOPCHECK_REVERSE set the tests are declared in reverse order.
import { describe, expect, test } from 'vitest';
import OpenAI from 'openai';

const { useCassette, withCassette } = await import(process.env.LOOPCHECK_VITEST_HELPER);

const TOOLS = [
  {
    type: 'function',
    name: 'lookup',
    description: 'Look one step of the research up.',
    parameters: {
      type: 'object',
      properties: { step: { type: 'integer' } },
      required: ['step'],
      additionalProperties: false,
    },
  },
];

async function research(topic) {
  const client = new OpenAI({ maxRetries: 0 });
  let response = await client.responses.create({ model: 'gpt-5', input: `Research ${topic}.`, tools: TOOLS });
  let requests = 1;
  for (;;) {
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return [response.output_text, requests];
    const input = calls.map((call) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: `result ${JSON.parse(call.arguments).step}`,
    }));
    response = await client.responses.create({ model: 'gpt-5', previous_response_id: response.id, input, tools: TOOLS });
    requests += 1;
  }
}

const tests = [
  ['tides', (name) => test(name, (ctx) => withCassette(ctx, async () => {
    expect(await research('tides')).toEqual(['done: tides', 3]);
  }))],
  ['comets', (name) => describe('hooks', () => {
    const cassette = useCassette();
    test(name, async () => {
      expect(cassette.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:/);
      expect(await research('comets')).toEqual(['done: comets', 3]);
    });
  })],
];
if (process.env.LOOPCHECK_REVERSE) tests.reverse();
for (const [name, declare] of tests) declare(name);
