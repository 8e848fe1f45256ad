// Browser-safe exports: schemas and pure rules. Node-only helpers live in `@dryft/libs/node`.
export * from './errors';
export * from './harness/events';
export * from './harness/spec';
export * from './benchmarks/definition';
export * from './benchmarks/log-cap';
export * from './benchmarks/capacity';
export * from './archive/tar';
export * from './archive/rules';
export * from './archive/python';
export * from './rest/accounts';
export * from './rest/runs';
export * from './rest/queries';
export * from './protocol/agents';
export * from './protocol/live';
export * from './rest/github';
export * from './rest/organizer';
export * from './rest/storage';
