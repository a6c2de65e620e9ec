import { defineConfig } from 'vitest/config';

// One `loopcheck serve` for the run, holding each test to its snapshot in
// LOOPCHECK_SNAPSHOTS.
export default defineConfig({
  test: { include: ['*.test.mjs'], globalSetup: [process.env.LOOPCHECK_VITEST_HELPER] },
});
