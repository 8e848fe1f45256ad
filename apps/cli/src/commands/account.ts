import { HealthView, MeView, PublicBenchmark } from '@dryft/libs';
import { checkTokenFormat } from '@dryft/libs/node';
import { z } from 'zod';
import { isTooOpen, readConfig, writeConfig } from '../config';
import type { Context } from '../context';
import { CliError, EXIT, tokenAdvice } from '../errors';
import { ApiClient, ApiError, NetworkError } from '../http';
import { CLI_VERSION } from '../version';

interface Check {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

/** `dryft doctor`: can this machine reach the hub, and who does the token act for? */
export async function doctor(ctx: Context): Promise<number> {
  const s = await ctx.settings();
  const checks: Check[] = [];
  let exit: number = EXIT.ok;
  const fail = (code: number) => {
    if (exit === EXIT.ok) exit = code;
  };
  checks.push({
    name: 'cli',
    ok: true,
    detail: `dryft ${CLI_VERSION}, Node ${process.versions.node}, ${process.platform}-${process.arch}`,
  });
  checks.push({ name: 'api url', ok: true, detail: `${s.apiUrl} (from ${s.apiUrlSource})` });

  const anon = new ApiClient(s.apiUrl, undefined, s.tokenSource, ctx.retryBaseMs);
  let health: z.infer<typeof HealthView> | undefined;
  try {
    const t0 = Date.now();
    health = await anon.call(HealthView, '/api/health', { timeoutMs: 10_000 });
    checks.push({
      name: 'api reachable',
      ok: health.status === 'ok',
      detail: `hub ${health.version}, database ${health.db}, answered in ${Date.now() - t0} ms`,
      hint:
        health.status === 'ok'
          ? undefined
          : 'The hub is up but degraded; runs may wait. Tell the event organizer if it persists.',
    });
    if (health.status !== 'ok') fail(EXIT.server);
    if (health.version !== CLI_VERSION) {
      checks.push({
        name: 'versions',
        ok: true,
        detail: `the hub runs ${health.version}, this CLI is ${CLI_VERSION}; if a command misbehaves, reinstall the CLI with the starter's install-dryft.sh`,
      });
    }
  } catch (err) {
    const e = err as CliError;
    checks.push({
      name: 'api reachable',
      ok: false,
      detail: e.message.split('\n')[0],
      hint:
        e instanceof NetworkError
          ? 'Check DRYFT_API_URL (or --api-url) and your network; the hub must be running.'
          : undefined,
    });
    fail(e.exitCode ?? EXIT.network);
  }

  if (!s.token) {
    checks.push({
      name: 'token',
      ok: false,
      detail: `no token: ${s.tokenSource}`,
      hint: 'Set DRYFT_TOKEN in this terminal or run `dryft login`.',
    });
    fail(EXIT.auth);
  } else {
    const fmt = checkTokenFormat(s.token, 'pat');
    if (!fmt.ok) {
      checks.push({
        name: 'token',
        ok: false,
        detail: `from ${s.tokenSource}: ${fmt.message}`,
        hint: tokenAdvice(s.tokenSource),
      });
      fail(EXIT.auth);
    } else {
      checks.push({
        name: 'token format',
        ok: true,
        detail: `dryft_pat_… from ${s.tokenSource} (shape and checksum fine)`,
      });
      if (s.tokenSource.startsWith('the config file') && (await isTooOpen(s.configFile))) {
        checks.push({
          name: 'config file',
          ok: false,
          detail: `${s.configFile} is readable by other users`,
          hint: `Run: chmod 600 ${s.configFile}`,
        });
      }
      if (health) {
        const api = new ApiClient(s.apiUrl, s.token, s.tokenSource, ctx.retryBaseMs);
        try {
          const me = await api.call(MeView, '/api/me');
          const team = me.teams.find((t) => t.id === me.activeTeamId);
          checks.push({ name: 'token valid', ok: true, detail: `acts for ${me.user.login}` });
          checks.push({
            name: 'team',
            ok: Boolean(team),
            detail: team
              ? `${team.name} (${team.slug}), your role: ${team.role}, ${team.memberCount} member(s)`
              : 'the token has no team',
          });
        } catch (err) {
          const e = err as CliError;
          checks.push({
            name: 'token valid',
            ok: false,
            detail: e.message.split('\n')[0],
            hint:
              e instanceof ApiError && e.code === 'token_other_hub'
                ? `The hub here is ${s.apiUrl} (from ${s.apiUrlSource}); use the hub that made the token, or a token made on this one.`
                : e instanceof ApiError && e.status === 401
                  ? tokenAdvice(s.tokenSource)
                  : undefined,
          });
          fail(e.exitCode);
        }
      }
    }
  }

  if (health) {
    try {
      const benchmarks = await anon.call(z.array(PublicBenchmark), '/api/benchmarks');
      checks.push({
        name: 'benchmarks',
        ok: true,
        detail: benchmarks.map((b) => `${b.id}${b.submissionsOpen ? '' : ' (closed)'}`).join(', ') || 'none',
      });
    } catch (err) {
      checks.push({ name: 'benchmarks', ok: false, detail: (err as Error).message.split('\n')[0] });
    }
  }

  if (ctx.json) {
    ctx.out.data({
      ok: exit === EXIT.ok,
      checks,
      apiUrl: s.apiUrl,
      cliVersion: CLI_VERSION,
      hubVersion: health?.version ?? null,
    });
  } else {
    for (const c of checks) {
      const mark = c.ok ? ctx.out.paint('green', 'ok  ') : ctx.out.paint('red', 'FAIL');
      ctx.out.line(`${mark} ${c.name.padEnd(14)} ${c.detail}`);
      if (!c.ok && c.hint) for (const h of c.hint.split('\n')) ctx.out.line(`     ${' '.repeat(14)} ${h}`);
    }
    ctx.out.line(
      exit === EXIT.ok
        ? 'Everything looks fine.'
        : 'Fix the FAIL lines above, then run `dryft doctor` again.',
    );
  }
  return exit;
}

/** `dryft login`: checks a token and stores it in the config file (0600). */
export async function login(ctx: Context, opts: { tokenStdin?: boolean; verify?: boolean }): Promise<number> {
  const s = await ctx.settings();
  let token: string;
  if (opts.tokenStdin || !ctx.streams.stdin.isTTY) {
    token = (await ctx.readStdin()).trim().split(/\r?\n/)[0]?.trim() ?? '';
  } else {
    ctx.out.note('Paste a team API token (a team owner or admin creates one under Team → API tokens).');
    token = (await ctx.readSecret('Token (input hidden): ')).trim();
  }
  if (!token)
    throw new CliError(
      EXIT.badInput,
      'No token given. Pipe it on stdin (`dryft login --token-stdin < file`) or paste it at the prompt.',
    );
  const fmt = checkTokenFormat(token, 'pat');
  if (!fmt.ok) throw new CliError(EXIT.auth, `Not saved: ${fmt.message}`, `token_${fmt.reason}`);
  let who: string | null = null;
  if (opts.verify !== false) {
    const api = new ApiClient(s.apiUrl, token, 'the token you just entered', ctx.retryBaseMs);
    const me = await api.call(MeView, '/api/me');
    const team = me.teams.find((t) => t.id === me.activeTeamId);
    who = `${me.user.login}${team ? ` on team ${team.name}` : ''}`;
  }
  const current = await readConfig(s.configFile);
  // `dryft --api-url URL login` also remembers the hub, so later commands need neither flag nor env.
  const apiUrl = ctx.flags.apiUrl ? s.apiUrl : current.apiUrl;
  await writeConfig(s.configFile, {
    ...current,
    token,
    ...(apiUrl ? { apiUrl } : {}),
    savedAt: new Date().toISOString(),
  });
  if (ctx.json) ctx.out.data({ saved: true, configFile: s.configFile, actsFor: who });
  else {
    ctx.out.line(
      `Saved the token to ${s.configFile} (readable only by you)${who ? `; it acts for ${who}` : ''}.`,
    );
    if (ctx.env.DRYFT_TOKEN)
      ctx.out.note('Note: DRYFT_TOKEN is set in this terminal and takes precedence over the saved token.');
  }
  return EXIT.ok;
}

export async function logout(ctx: Context): Promise<number> {
  const s = await ctx.settings();
  const current = await readConfig(s.configFile);
  const had = Boolean(current.token);
  if (had) {
    delete current.token;
    delete current.savedAt;
    await writeConfig(s.configFile, current);
  }
  if (ctx.json) ctx.out.data({ removed: had, configFile: s.configFile });
  else ctx.out.line(had ? `Removed the saved token from ${s.configFile}.` : 'No saved token.');
  return EXIT.ok;
}
