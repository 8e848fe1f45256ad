// Node flags every launcher of the API passes (scripts/start.mjs, bench/run.mjs; docker/Dockerfile.api
// repeats them in its CMD). Read by require(), so a launcher needs no build.
//
// --max-semi-space-size=64: a young generation of 64 MiB per semi-space instead of 16. A hub at
// work allocates a little for every batch and line it relays; with 16 MiB enough of it survived two
// scavenges to fill the old generation every few seconds, and its mark-compact pauses (5-12 ms, seen
// with --trace-gc in `npm run bench`) were the slowest lines watchers saw. With 64 there was no
// mark-compact while lines streamed (bench/RESULTS.md, 2026-11-30 evening). It costs up to ~100 MiB
// more resident memory at peak, not at rest.
module.exports = ['--max-semi-space-size=64'];
