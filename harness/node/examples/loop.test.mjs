// The catalogue against an in-process loop: each case run gets its own fake Responses API
// and tool backend from `loopcheck serve`, the agent is pointed at them, and the oracle
// judges what it did. Run with `npm run test:examples` (LOOPCHECK_BIN names the binary).

import { test } from 'vitest';
import { loopcheckCases, loopcheckSession } from 'loopcheck-node-controller/vitest';
import { agentFor } from './agent-for-session.mjs';

// The agent chains with previous_response_id only: the stateless runs show as skipped.
const runs = await loopcheckCases({
  filter: ['correlation/02-call-id-distinct', 'dispatch/01-unknown-tool', 'terminal/05-incomplete-partial-text'],
  supports: ['previous_response_id'],
});

test.for(runs)('%s', async (run, ctx) => {
  const session = await loopcheckSession(run, ctx);
  await session.expectConforms(agentFor(session).run(session.task.input));
});
