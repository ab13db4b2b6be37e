import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Native kernels and child hosts compete for 2 cores; two files at a time is plenty.
    maxWorkers: 2,
  },
});
