// Node-only helpers (crypto, zlib, file system).
export * from './tokens';
export * from './archive/node';
export * from './benchmarks/load';
export * from './benchmarks/hidden-seeds';
export * from './starters/tree';
