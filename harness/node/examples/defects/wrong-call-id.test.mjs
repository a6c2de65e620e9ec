// A seeded defect, to show what a failing case looks like: this agent answers each call
// under the call's item id (fc_...) instead of its call_id (call_...). The real API
// refuses that with a 400, and so does loopcheck's fake one. Excluded from the default
// run; `vitest run --config vitest.defects.config.mjs` runs it, and it must fail.

import { test } from 'vitest';
import { loopcheckCases, loopcheckSession } from 'loopcheck-node-controller/vitest';
import { SupportAgent } from '../support-agent.mjs';
import { agentFor } from '../agent-for-session.mjs';

class ItemIdAgent extends SupportAgent {
  outputFor(call, output) {
    return { ...super.outputFor(call, output), call_id: call.id };
  }
}

const runs = await loopcheckCases({ filter: ['correlation/02-call-id-distinct'], supports: ['previous_response_id'] });

test.for(runs)('%s', async (run, ctx) => {
  const session = await loopcheckSession(run, ctx);
  await session.expectConforms(agentFor(session, ItemIdAgent).run(session.task.input));
});
