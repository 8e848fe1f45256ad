#!/usr/bin/env node
// `npm test`: every tier (unit, integration, end to end, the Python harness) and one closing line
// "Total: N passed, N failed, N skipped" that CI reads.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
const outDir = path.join(root, '.data', 'test-reports');
mkdirSync(outDir, { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0 };
let broken = false;
// Every failed test, named again after the closing line: CI shows only the tail of the output,
// and a failure scrolled away by the tiers after it cannot be told from a flake otherwise.
const failures = [];

function pythonForHarness() {
  // The python3 on PATH may be a pyenv without Debian's torch and pytest: prefer the system one.
  const candidates = [process.env.HARNESS_PYTHON, '/usr/bin/python3', 'python3'].filter(Boolean);
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ['-c', 'import pytest'], { stdio: 'ignore' });
    if (r.status === 0) return candidate;
  }
  return null;
}

/** Runs vitest under `node` (a binary path) with `args`; adds its counts to the totals. */
function runVitest(node, args, reportName, extraEnv = {}) {
  const report = path.join(outDir, reportName);
  rmSync(report, { force: true });
  const r = spawnSync(
    node,
    [
      path.join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      ...args,
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
    ],
    { cwd: root, stdio: 'inherit', env: { ...process.env, ...extraEnv } },
  );
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    totals.passed += json.numPassedTests;
    totals.failed += json.numFailedTests;
    totals.skipped += json.numPendingTests + json.numTodoTests;
    if (r.status !== 0 && json.numFailedTests === 0) broken = true;
    for (const file of json.testResults ?? []) {
      const where = `${path.relative(root, file.name)} (${reportName})`;
      for (const test of file.assertionResults ?? []) {
        if (test.status !== 'failed') continue;
        const why = String(test.failureMessages?.[0] ?? '')
          .split('\n')
          .slice(0, 3)
          .join(' | ');
        failures.push(`${where}: ${test.fullName}\n      ${why.slice(0, 600)}`);
      }
      // A file that failed to load (syntax, import, a hook) has no failed test of its own.
      if (file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed')) {
        failures.push(`${where}: the file failed\n      ${String(file.message ?? '').slice(0, 600)}`);
      }
    }
  } else {
    broken = true;
  }
}

/**
 * The Node LTS the project moves to (issue: a supported Node): its binary from the npm registry
 * (the platform package `node-<os>-<arch>`, which carries the binary itself), kept in .data.
 */
const NEXT_NODE = '24.22.3';
function nextNodeBinary() {
  const pkg = `node-${process.platform}-${process.arch}`;
  const prefix = path.join(root, '.data', `node-${NEXT_NODE}`);
  const bin = path.join(prefix, 'node_modules', pkg, 'bin', 'node');
  if (!existsSync(bin)) {
    console.log(`[tests] fetching Node ${NEXT_NODE} (${pkg}) from the npm registry into ${prefix}`);
    mkdirSync(prefix, { recursive: true });
    const r = spawnSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', prefix, `${pkg}@${NEXT_NODE}`],
      { cwd: prefix, stdio: 'inherit' },
    );
    if (r.status !== 0 || !existsSync(bin)) return null;
  }
  return bin;
}

// Two Node LTS lines, each with the tiers of the installs it runs: the machine's Node (20 here:
// `npm start`'s quick start) runs every tier; in CI and with DRYFT_NODE24=1 the integration tier
// moves to Node 24 (the images' runtime, docker/Dockerfile.*) and the unit tiers run under both.
// Running integration twice would add its ~3 minutes to a suite meant to stay inside 20.
// DRYFT_NODE24=0 leaves Node 24 out; `npm run test:node24` runs its tiers alone.
const strictAll = process.env.CI === 'true' || process.env.DRYFT_REQUIRE_ALL === '1';
const wantNext =
  only === 'node24' ||
  (!only && process.env.DRYFT_NODE24 !== '0' && (strictAll || process.env.DRYFT_NODE24 === '1'));
const NEXT_PROJECTS = ['unit', 'web', 'integration'];
const THIS_PROJECTS = wantNext ? ['unit', 'web', 'e2e', 'fault'] : null;

if (!only || only === 'node') {
  const projects = only === 'node' ? null : THIS_PROJECTS;
  runVitest(process.execPath, projects ? projects.flatMap((p) => ['--project', p]) : [], 'vitest.json');
}

if (wantNext) {
  const node = nextNodeBinary();
  if (!node) {
    console.error(
      `\n[tests] FAILED: could not fetch Node ${NEXT_NODE} from the npm registry for the Node 24 tiers.`,
    );
    broken = true;
  } else {
    console.log(`\n[tests] ${NEXT_PROJECTS.join(', ')} tiers under Node ${NEXT_NODE}`);
    // Children that start `node` by name (the CLI, scripts) get the same runtime.
    runVitest(
      node,
      NEXT_PROJECTS.flatMap((p) => ['--project', p]),
      'vitest-node24.json',
      {
        PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}`,
      },
    );
  }
} else if (!only) {
  console.warn(
    `\n[tests] Node ${NEXT_NODE} tiers not run here (CI runs them; DRYFT_NODE24=1 to run them too).\n`,
  );
}

if (!only || only === 'harness') {
  const python = pythonForHarness();
  if (!python && strictAll) {
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
        const [errors, failed, skipped, tests] = m.slice(1).map(Number);
        totals.failed += errors + failed;
        totals.skipped += skipped;
        totals.passed += tests - errors - failed - skipped;
        for (const hit of xml.matchAll(
          /<testcase[^>]*classname="([^"]*)"[^>]*name="([^"]*)"[^>]*>\s*<(failure|error)[^>]*message="([^"]*)"/g,
        )) {
          const why = hit[4]
            .replace(/&#10;/g, ' | ')
            .replace(/&quot;/g, '"')
            .replace(/&lt;/g, '<')
            .replace(/&gt;/g, '>')
            .replace(/&amp;/g, '&');
          failures.push(`harness ${hit[1]}::${hit[2]} (pytest)\n      ${why.slice(0, 600)}`);
        }
      } else broken = true;
      if (r.status !== 0 && r.status !== 1) broken = true;
    } else broken = true;
  }
}

// A runner that broke before reporting counts as a failure, so the closing line never reads clean.
if (broken && totals.failed === 0) totals.failed = 1;
if (failures.length > 0) {
  console.log(`\n[tests] ${failures.length} failed:`);
  for (const line of failures) console.log(`  - ${line}`);
}
console.log(`\nTotal: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || broken ? 1 : 0);
