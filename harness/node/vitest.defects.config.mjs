import { defineConfig } from 'vitest/config';

// The seeded defect alone: its test is meant to fail, so the examples' run leaves it out.
export default defineConfig({
  test: {
    include: ['examples/defects/*.test.mjs'],
    globalSetup: ['loopcheck-node-controller/vitest'],
  },
});
