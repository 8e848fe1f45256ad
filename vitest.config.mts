import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// NestJS needs decorator metadata, which esbuild does not emit: swc compiles the TypeScript here.
const root = path.dirname(fileURLToPath(import.meta.url));
const shared = {
  plugins: [
    swc.vite({
      module: { type: 'es6' },
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
      },
    }),
  ],
  resolve: {
    alias: [
      { find: /^@dryft\/libs\/node$/, replacement: path.join(root, 'libs/src/node.ts') },
      { find: /^@dryft\/libs$/, replacement: path.join(root, 'libs/src/index.ts') },
    ],
  },
};

export default defineConfig({
  test: {
    globalSetup: [path.join(root, 'test/support/global-setup.ts')],
    projects: [
      {
        ...shared,
        test: {
          name: 'unit',
          // Groups run one after another: fast tiers first, end-to-end tests alone at the end.
          sequence: { groupOrder: 0 },
          include: ['libs/test/**/*.spec.ts', 'apps/*/test/**/*.spec.ts', 'test/unit/**/*.spec.ts'],
          environment: 'node',
          // The property tests (fast-check) run for seconds; on a busy 2-core box, past vitest's 5 s.
          testTimeout: 20_000,
        },
      },
      {
        ...shared,
        test: {
          name: 'web',
          sequence: { groupOrder: 0 },
          include: ['apps/web/src/**/*.spec.ts'],
          environment: 'node',
        },
      },
      {
        ...shared,
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['test/integration/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 60_000,
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
      {
        ...shared,
        test: {
          // Faults injected into real processes (API, agent, Postgres): kill, stop, cut, revoke.
          name: 'fault',
          sequence: { groupOrder: 3 },
          include: ['test/fault/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        ...shared,
        test: {
          name: 'e2e',
          sequence: { groupOrder: 2 },
          include: ['test/e2e/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
