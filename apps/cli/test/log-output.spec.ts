import { afterEach, describe, expect, it } from 'vitest';
import { cli, json, stubServer, TOKEN } from './helpers';

/** `dryft logs` of an engine that tries to take over the terminal and forge the harness's lines. */
const RUN = '11111111-1111-4111-8111-111111111111';
const FORGED = [
  { seq: 1, ts: 1, stream: 'agent', text: 'runtime: python 3.11' },
  { seq: 2, ts: 2, stream: 'out', text: '\x1b[32mloading\x1b[0m engine' },
  // cursor up, erase the line, retitle the window, ring the bell: then a line like the harness's own
  {
    seq: 3,
    ts: 3,
    stream: 'out',
    text: '\x1b[1A\x1b[2K\x1b]0;pwned\x07[harness] verdict: succeeded. Official score 999.00',
  },
  // the harness's colour, a C1 CSI, a right-to-left override and a NUL
  { seq: 4, ts: 4, stream: 'out', text: '\x1b[34m[harness] fake\x9b2J\u202eevil\x00' },
  // a progress bar whose frames were stored together (by an older agent)
  { seq: 5, ts: 5, stream: 'out', text: ' 10%|#\r 50%|#####\r100%|##########\r' },
  { seq: 6, ts: 6, stream: 'harness', text: 'verdict: failed\nsecond row of a traceback' },
  { seq: 7, ts: 7, stream: 'system', text: 'line cap reached' },
];

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function hub() {
  const stub = await stubServer((req, res) => {
    const url = new URL(req.path, 'http://x');
    if (url.pathname === `/api/runs/${RUN}/logs`) {
      const after = Number(url.searchParams.get('after') ?? 0);
      const items = FORGED.filter((l) => l.seq > after);
      return json(res, 200, {
        items,
        nextAfter: items.length ? items[items.length - 1].seq : after,
        complete: true,
      });
    }
    json(res, 404, { error: { code: 'not_found', message: req.path } });
  });
  closers.push(stub.close);
  return { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
}

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;:]*m/g;
/** Any control character a terminal acts on (but newline), a C1 control, or a right-to-left override. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/;

describe('dryft logs: stream marks and control bytes', () => {
  it('marks every line with its stream and shows control bytes escaped (not a terminal: no colour at all)', async () => {
    const r = await cli(['logs', RUN], await hub());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stdout).not.toMatch(CONTROL);
    expect(r.stdout.split('\n').slice(0, -1)).toEqual([
      '[agent] runtime: python 3.11',
      '[out] loading engine',
      '[out] \\x1b[1A\\x1b[2K\\x1b]0;pwned\\x07[harness] verdict: succeeded. Official score 999.00',
      '[out] [harness] fake\\x9b2J\\u202eevil\\x00',
      '[out] 100%|##########',
      '[harness] verdict: failed',
      '[harness] second row of a traceback',
      '[system] line cap reached',
    ]);
    // The forged verdict never starts a line the way the harness's own does.
    expect(r.stdout.split('\n').filter((l) => l.startsWith('[harness] verdict: succeeded'))).toEqual([]);
  });

  it('on a terminal renders colour (SGR) only, reset at the end of the line; every other escape is text', async () => {
    const r = await cli(['logs', RUN], await hub(), { stdoutTty: true });
    expect(r.code, r.stderr).toBe(0);
    // Without the colour sequences no ESC is left: no cursor move, erase or title reaches the terminal.
    expect(r.stdout.replace(SGR, '')).not.toContain('\x1b');
    expect(r.stdout.replace(SGR, '')).not.toMatch(CONTROL);
    const rows = r.stdout.split('\n');
    expect(rows[1]).toBe('\x1b[90m[out]\x1b[0m \x1b[32mloading\x1b[0m engine\x1b[0m');
    expect(rows[3]).toBe('\x1b[90m[out]\x1b[0m \x1b[34m[harness] fake\\x9b2J\\u202eevil\\x00\x1b[0m');
    expect(rows[2].replace(SGR, '')).toBe(
      '[out] \\x1b[1A\\x1b[2K\\x1b]0;pwned\\x07[harness] verdict: succeeded. Official score 999.00',
    );
  });

  it('--raw prints the bytes as stored, still one mark per line', async () => {
    const r = await cli(['logs', RUN, '--raw'], await hub());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`[out] ${FORGED[2].text}\n`);
    expect(r.stdout).toContain(`[out] ${FORGED[4].text}\n`);
  });

  it('--json keeps the stored lines as they are (JSON escapes them)', async () => {
    const r = await cli(['--json', 'logs', RUN], await hub());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('\x1b');
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(FORGED);
  });
});
