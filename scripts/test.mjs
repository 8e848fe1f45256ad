#!/usr/bin/env node
// `npm test`: every tier (unit, integration, end to end, the Python harness) and one closing line
// "Total: N passed, N failed, N skipped" that CI reads.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
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

/**
 * Runs one command to its end. `log` null: its output goes to this terminal as it comes; a path:
 * to that file, which the lane prints whole when the job is done (two lanes run side by side, and
 * interleaved lines of two test runners could not be read).
 */
function runJob(command, args, { env = {}, log = null } = {}) {
  return new Promise((resolve) => {
    const out = log ? openSync(log, 'a') : 'inherit';
    const child = spawn(command, args, {
      cwd: root,
      stdio: ['ignore', out, out],
      env: { ...process.env, ...env },
    });
    // 'close' may follow 'error' (a command that could not start): the file is closed once.
    let done = false;
    const finish = (status) => {
      if (done) return;
      done = true;
      if (log) closeSync(out);
      resolve(status);
    };
    child.on('error', (err) => {
      console.error(`[tests] could not start ${command}: ${err.message}`);
      finish(-1);
    });
    child.on('close', (code, signal) => finish(code ?? (signal ? 128 : 1)));
  });
}

/** Runs vitest under `node` (a binary path) with `args`; adds its counts to the totals. */
async function runVitest(node, args, reportName, extraEnv = {}, log = null) {
  const report = path.join(outDir, reportName);
  rmSync(report, { force: true });
  const status = await runJob(
    node,
    [
      path.join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      ...args,
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
    ],
    { env: extraEnv, log },
  );
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    totals.passed += json.numPassedTests;
    totals.failed += json.numFailedTests;
    totals.skipped += json.numPendingTests + json.numTodoTests;
    if (status !== 0 && json.numFailedTests === 0) broken = true;
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
const projectArgs = (projects) => projects.flatMap((p) => ['--project', p]);

/** The Python harness tests (pytest); adds their counts to the totals. */
async function runHarness(log) {
  const python = pythonForHarness();
  if (!python && strictAll) {
    console.error(
      '\n[tests] FAILED: no Python with pytest for the harness tests (apt-get install python3-pytest python3-torch, or set HARNESS_PYTHON).',
    );
    broken = true;
    return;
  }
  if (!python) {
    // A bare machine (Node, npm and python3 only): say so loudly; CI installs pytest and never skips.
    console.warn(
      '\n[tests] SKIPPING the Python harness tests: no Python with pytest (apt-get install python3-pytest python3-torch, or set HARNESS_PYTHON).\n',
    );
    totals.skipped += 1;
    return;
  }
  const junit = path.join(outDir, 'pytest.xml');
  rmSync(junit, { force: true });
  const status = await runJob(
    python,
    ['-m', 'pytest', 'harness/tests', '-q', `--junitxml=${junit}`, '-p', 'no:cacheprovider'],
    { env: { PYTHONPATH: path.join(root, 'harness'), PYTHONDONTWRITEBYTECODE: '1' }, log },
  );
  if (!existsSync(junit)) {
    broken = true;
    return;
  }
  const xml = readFileSync(junit, 'utf8');
  const m =
    /<testsuite[^>]*\berrors="(\d+)"[^>]*\bfailures="(\d+)"[^>]*\bskipped="(\d+)"[^>]*\btests="(\d+)"/.exec(
      xml,
    );
  if (!m) {
    broken = true;
    return;
  }
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
  if (status !== 0 && status !== 1) broken = true;
}

/** The Node 24 tiers (NEXT_PROJECTS), when this run wants them. */
async function runNext(log) {
  const node = nextNodeBinary();
  if (!node) {
    console.error(
      `\n[tests] FAILED: could not fetch Node ${NEXT_NODE} from the npm registry for the Node 24 tiers.`,
    );
    broken = true;
    return;
  }
  console.log(`\n[tests] ${NEXT_PROJECTS.join(', ')} tiers under Node ${NEXT_NODE}`);
  // Children that start `node` by name (the CLI, scripts) get the same runtime.
  await runVitest(
    node,
    projectArgs(NEXT_PROJECTS),
    'vitest-node24.json',
    {
      PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}`,
    },
    log,
  );
}

// Two lanes side by side. The suite waits far more than it computes (processes starting, leases
// running out, browsers loading): on the 2-core development box one lane kept the cores busy 36 %
// of its 19 minutes (user + sys 14 min), and two lanes finish in 12–13. The end-to-end tier (the browser's) streams here; the fault tier, the harness tests
// and the Node 24 tiers run beside it, their output kept in a file and printed whole when each is
// done. DRYFT_TEST_LANES=1 runs everything in one lane, one job after another (a one-core box, or
// a flake that is suspected of needing the machine to itself).
const nodeVitest = (projects, report, log) =>
  runVitest(process.execPath, projects ? projectArgs(projects) : [], report, {}, log);
const main = [];
const side = [];
if (only === 'node') main.push((log) => nodeVitest(null, 'vitest.json', log));
if (only === 'node24') main.push(runNext);
if (only === 'harness') main.push(runHarness);
if (!only) {
  // Without Node 24 the integration tier runs here on the machine's Node.
  const mainProjects = wantNext ? ['unit', 'web', 'e2e'] : ['unit', 'web', 'integration', 'e2e'];
  main.push((log) => nodeVitest(mainProjects, 'vitest.json', log));
  side.push((log) => nodeVitest(['fault'], 'vitest-fault.json', log), runHarness);
  if (wantNext) side.push(runNext);
  else
    console.warn(
      `\n[tests] Node ${NEXT_NODE} tiers not run here (CI runs them; DRYFT_NODE24=1 to run them too).\n`,
    );
}

async function lane(jobs, name) {
  for (const [i, job] of jobs.entries()) {
    const log = name ? path.join(outDir, `${name}-${i}.log`) : null;
    if (log) rmSync(log, { force: true });
    const started = Date.now();
    await job(log);
    if (log) {
      const seconds = Math.round((Date.now() - started) / 1000);
      console.log(
        `\n[tests] ===== ${name} lane, job ${i + 1} of ${jobs.length} (${seconds} s), its output: =====`,
      );
      if (existsSync(log)) process.stdout.write(readFileSync(log));
      console.log(`[tests] ===== end of the ${name} lane's job ${i + 1} =====\n`);
    }
  }
}

if (process.env.DRYFT_TEST_LANES === '1') await lane([...main, ...side], null);
else await Promise.all([lane(main, null), lane(side, 'side')]);

// A runner that broke before reporting counts as a failure, so the closing line never reads clean.
if (broken && totals.failed === 0) totals.failed = 1;
if (failures.length > 0) {
  console.log(`\n[tests] ${failures.length} failed:`);
  for (const line of failures) console.log(`  - ${line}`);
}
console.log(`\nTotal: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || broken ? 1 : 0);
