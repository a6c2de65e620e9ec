// A loop that puts a fresh trace id in every request's `metadata`: its snapshot drifts on
// every run unless loopcheck.toml redacts the field (the vitest twin of test_traced.py).
import { randomUUID } from 'node:crypto';
import { test } from 'vitest';
import OpenAI from 'openai';

const { loopcheckCases, loopcheckSession } = await import(process.env.LOOPCHECK_VITEST_HELPER);

async function tracedLoop(session) {
  const { task } = session;
  const client = new OpenAI({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
  const request = { model: task.model, tools: task.tools, metadata: { trace_id: randomUUID() } };
  if (task.instructions) request.instructions = task.instructions;
  let response = await client.responses.create({ ...request, input: task.input });
  for (;;) {
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return { status: 'completed', output_text: response.output_text };
    const input = [];
    for (const call of calls) {
      const answer = await fetch(`${session.toolsUrl}/call/${call.name}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ call_id: call.call_id, arguments: JSON.parse(call.arguments), principal: task.principal }),
      }).then((reply) => reply.json());
      input.push({ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify(answer.result ?? answer) });
    }
    response = await client.responses.create({ ...request, previous_response_id: response.id, input });
  }
}

const runs = (await loopcheckCases({ filter: ['correlation/01-single-call'] })).filter(
  (run) => run.state === 'previous_response_id',
);

test.for(runs)('%s', async (run, ctx) => {
  const session = await loopcheckSession(run, ctx);
  await session.expectConforms(tracedLoop(session));
});
