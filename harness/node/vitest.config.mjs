import { defineConfig } from 'vitest/config';

// The examples: one `loopcheck serve` for the run (the global setup), the in-process
// agent's tests. The seeded defect has a config of its own (vitest.defects.config.mjs).
export default defineConfig({
  test: {
    include: ['examples/*.test.mjs'],
    globalSetup: ['loopcheck-node-controller/vitest'],
  },
});
