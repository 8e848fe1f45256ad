#!/usr/bin/env node
// `npm test`: every tier (unit, integration, end to end, the Python harness) and one closing line
// "Total: N passed, N failed, N skipped" that CI reads.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
const outDir = path.join(root, '.data', 'test-reports');
mkdirSync(outDir, { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0 };
let broken = false;

function pythonForHarness() {
  // The python3 on PATH may be a pyenv without Debian's torch and pytest: prefer the system one.
  const candidates = [process.env.HARNESS_PYTHON, '/usr/bin/python3', 'python3'].filter(Boolean);
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ['-c', 'import pytest'], { stdio: 'ignore' });
    if (r.status === 0) return candidate;
  }
  return null;
}

if (!only || only === 'node') {
  const report = path.join(outDir, 'vitest.json');
  const r = spawnSync(
    'npx',
    ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    {
      cwd: root,
      stdio: 'inherit',
      env: process.env,
    },
  );
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    totals.passed += json.numPassedTests;
    totals.failed += json.numFailedTests;
    totals.skipped += json.numPendingTests + json.numTodoTests;
    if (r.status !== 0 && json.numFailedTests === 0) broken = true;
  } else {
    broken = true;
  }
}

if (!only || only === 'harness') {
  const python = pythonForHarness();
  const strict = process.env.CI === 'true' || process.env.DRYFT_REQUIRE_ALL === '1';
  if (!python && strict) {
    console.error(
      '\n[tests] FAILED: no Python with pytest for the harness tests (apt-get install python3-pytest python3-torch, or set HARNESS_PYTHON).',
    );
    broken = true;
  } else if (!python) {
    // A bare machine (Node, npm and python3 only): say so loudly; CI installs pytest and never skips.
    console.warn(
      '\n[tests] SKIPPING the Python harness tests: no Python with pytest (apt-get install python3-pytest python3-torch, or set HARNESS_PYTHON).\n',
    );
    totals.skipped += 1;
  } else {
    const junit = path.join(outDir, 'pytest.xml');
    const r = spawnSync(
      python,
      ['-m', 'pytest', 'harness/tests', '-q', `--junitxml=${junit}`, '-p', 'no:cacheprovider'],
      {
        cwd: root,
        stdio: 'inherit',
        env: { ...process.env, PYTHONPATH: path.join(root, 'harness'), PYTHONDONTWRITEBYTECODE: '1' },
      },
    );
    if (existsSync(junit)) {
      const xml = readFileSync(junit, 'utf8');
      const m =
        /<testsuite[^>]*\berrors="(\d+)"[^>]*\bfailures="(\d+)"[^>]*\bskipped="(\d+)"[^>]*\btests="(\d+)"/.exec(
          xml,
        );
      if (m) {
        const [errors, failures, skipped, tests] = m.slice(1).map(Number);
        totals.failed += errors + failures;
        totals.skipped += skipped;
        totals.passed += tests - errors - failures - skipped;
      } else broken = true;
      if (r.status !== 0 && r.status !== 1) broken = true;
    } else broken = true;
  }
}

// A runner that broke before reporting counts as a failure, so the closing line never reads clean.
if (broken && totals.failed === 0) totals.failed = 1;
console.log(`\nTotal: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || broken ? 1 : 0);
