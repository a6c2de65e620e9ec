import { defineConfig } from 'vitest/config';

// The cassette suite alone: no `loopcheck serve`, each test its own recorder.
export default defineConfig({ test: { include: ['*.test.mjs'] } });
