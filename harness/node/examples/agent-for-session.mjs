// Wires the agent to a loopcheck session, as a test of the application would: the model
// is the session's fake API, the tools its fixture backend.

import OpenAI from 'openai';
import { SupportAgent } from './support-agent.mjs';

/** The agent, wired to a session: its model is the fake API, its tools the fixture
 * backend, which runs each call for the task's principal. */
export function agentFor(session, Agent = SupportAgent) {
  const { task } = session;
  return new Agent({
    client: new OpenAI({ baseURL: session.baseUrl, apiKey: session.apiKey }),
    model: task.model,
    instructions: task.instructions,
    tools: task.tools,
    maxRounds: task.max_rounds,
    async callTool(name, args, callId) {
      const answer = await fetch(`${session.toolsUrl}/call/${encodeURIComponent(name)}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ call_id: callId, arguments: args, principal: task.principal }),
      });
      const body = await answer.json();
      return answer.ok ? { ok: true, result: body.result } : { ok: false, error: body.error?.message ?? `HTTP ${answer.status}` };
    },
  });
}
