import { Command, CommanderError, Option } from 'commander';
import { Context, type GlobalFlags } from './context';
import { CliError, EXIT } from './errors';
import { ApiError } from './http';
import type { SocketFactory } from './live';
import type { Streams } from './output';
import { CLI_VERSION } from './version';
import { doctor, login, logout } from './commands/account';
import { packageCmd, validate } from './commands/local';
import { compareCmd } from './commands/compare';
import { cancelCmd, logsCmd, rankCmd, resultCmd, runCmd, runsCmd } from './commands/runs';
import { submissionsCmd, submitCmd } from './commands/submissions';

export interface CliDeps {
  streams: Streams;
  env: NodeJS.ProcessEnv;
  socketFactory?: SocketFactory;
  /** Where the command runs (default: process.cwd()); dryft.json is looked for here and above. */
  cwd?: string;
}

const EXIT_HELP = `
Exit codes:
  0  success
  1  the run failed or was canceled
  2  bad input (usage, validation, unknown id, refused request)
  3  authentication (no token, malformed token, 401, 403)
  4  network: the API could not be reached
  5  server error (5xx)
  6  --wait ran out of time (the run goes on)

Environment:
  DRYFT_TOKEN     team API token (overrides the one saved by \`dryft login\`)
  DRYFT_API_URL   the hub (default http://localhost:3000)
  NO_COLOR        no colours
`;

/** Builds the program; `action` receives the context and returns the exit code. */
function build(deps: CliDeps, setExit: (code: number) => void): Command {
  const program = new Command('dryft');
  const ctxOf = (cmd: Command) =>
    new Context(deps.streams, deps.env, cmd.optsWithGlobals() as GlobalFlags, deps.socketFactory, deps.cwd);
  // Commander passes (args..., options, command); the command is always last.
  const act =
    (fn: (ctx: Context, ...args: never[]) => Promise<number>) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      setExit(await fn(ctxOf(cmd), ...(args.slice(0, -1) as never[])));
    };
  program
    .description(
      'The Dryft command line: validate, package and submit engines, start runs and follow them live.',
    )
    .version(CLI_VERSION, '-V, --version')
    .option('--json', 'machine-readable JSON on stdout')
    .option('--api-url <url>', 'the hub to talk to (default: $DRYFT_API_URL or http://localhost:3000)')
    .option('--no-color', 'no colours (NO_COLOR does the same)')
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', EXIT_HELP)
    .configureOutput({
      writeOut: (s) => deps.streams.stdout.write(s),
      writeErr: (s) => deps.streams.stderr.write(s),
    })
    .exitOverride();

  program
    .command('doctor')
    .description('check the API is reachable, the token is valid, which team it acts for, and versions')
    .action(act((ctx) => doctor(ctx)));

  program
    .command('login')
    .description(
      'save a team API token in ~/.config/dryft/config.json (mode 0600); DRYFT_TOKEN still overrides it',
    )
    .option('--token-stdin', 'read the token from stdin instead of a hidden prompt')
    .option('--no-verify', 'save without checking it against the API')
    .addHelpText(
      'after',
      '\nThe token is never taken as an argument (it would land in your shell history).\nExample: dryft login            # paste at the hidden prompt\n         dryft login --token-stdin < token.txt',
    )
    .action(act((ctx, opts: { tokenStdin?: boolean; verify?: boolean }) => login(ctx, opts)));

  program
    .command('logout')
    .description('remove the token saved by `dryft login`')
    .action(act((ctx) => logout(ctx)));

  program
    .command('validate')
    .argument('<path>', 'engine folder, .tar.gz archive, or submission.py')
    .description("check a submission offline with the hub's own rules, rule by rule")
    .action(act((ctx, target: string) => validate(ctx, target)));

  program
    .command('package')
    .argument('<dir>', 'the engine folder (its contents become the archive root)')
    .requiredOption('-o, --output <file>', 'where to write the .tar.gz')
    .description(
      'pack a folder into a .tar.gz with engine.py at its root; the same folder always gives the same bytes',
    )
    .action(act((ctx, dir: string, opts: { output: string }) => packageCmd(ctx, dir, opts)));

  program
    .command('submit')
    .argument('<path>', 'engine folder, .tar.gz archive, or submission.py')
    .description(
      'validate, pack and upload; prints the submission ID (single-file submissions also start their run)',
    )
    .option(
      '-b, --benchmark <id>',
      "benchmark (default: this repository's dryft.json, else qwen3-4b-decode for folders and archives, deep-recurrence for submission.py)",
    )
    .option('--tier <tier>', 'single-file: compute tier (easy, medium or hard); required')
    .option('--dataset <id>', 'single-file: practice dataset; required for easy and medium')
    .addOption(
      new Option(
        '--mode <mode>',
        'single-file: run mode (default: official for the ranked tier, public otherwise)',
      ).choices(['public', 'official']),
    )
    .option('--wait <seconds>', 'single-file: wait this long for the run to finish')
    .option(
      '--upload-only',
      'single-file: upload without starting the run (start it with `dryft run SUBMISSION_ID`)',
    )
    .option('-y, --yes', 'confirm an official run without asking')
    .addHelpText(
      'after',
      '\nExamples:\n  dryft submit engine\n  dryft submit submission.py --tier easy --dataset square-mod-97 --wait 600\n  dryft submit submission.py --tier hard --yes',
    )
    .action(
      act((ctx, target: string, opts: Record<string, string | boolean | undefined>) =>
        submitCmd(ctx, target, opts as never),
      ),
    );

  program
    .command('run')
    .argument('<submission-id>', 'the Submission ID (from `dryft submit` or the submission’s Details panel)')
    .description('start a run of a submission (official runs ask for confirmation)')
    .addOption(
      new Option('--mode <mode>', 'public (feedback) or official (ranked)').choices(['public', 'official']),
    )
    .option('--tier <tier>', 'compute tier, for benchmarks with tiers')
    .option('--dataset <id>', 'practice dataset, for tiers that have them')
    .option(
      '--wait <seconds>',
      'wait this long for the run to finish; exit 0 succeeded, 1 failed/canceled, 6 still running',
    )
    .option('-y, --yes', 'confirm an official run without asking (needed without a terminal)')
    .option(
      '--idempotency-key <key>',
      'the key of this intended run (default: a new uuid); a script that records it before asking and passes it again after a restart never starts the run twice',
    )
    .addHelpText('after', '\nExample: dryft run SUBMISSION_ID --mode public --wait 3000')
    .action(
      act((ctx, id: string, opts: Record<string, string | boolean | undefined>) =>
        runCmd(ctx, id, opts as never),
      ),
    );

  program
    .command('submissions')
    .description("list your team's submissions, newest first")
    .option(
      '-b, --benchmark <id>',
      "only this benchmark (default: this repository's dryft.json; all for every one)",
    )
    .option('--limit <n>', 'how many (default 20)')
    .option('--cursor <cursor>', 'the next page (printed under the table)')
    .action(act((ctx, opts: Record<string, string | undefined>) => submissionsCmd(ctx, opts)));

  program
    .command('runs')
    .description("list your team's runs, newest first")
    .option(
      '-b, --benchmark <id>',
      "only this benchmark (default: this repository's dryft.json; all for every one)",
    )
    .option('--status <status>', 'queued, assigned, running, succeeded, failed or canceled')
    .option('--limit <n>', 'how many (default 20)')
    .option('--cursor <cursor>', 'the next page (printed under the table)')
    .action(act((ctx, opts: Record<string, string | undefined>) => runsCmd(ctx, opts)));

  program
    .command('logs')
    .argument('<run-id>', 'the Run ID')
    .description("print a run's log; --follow streams it live until the run ends")
    .option(
      '-f, --follow',
      'stream live (reconnects without gaps or duplicates); exits with the run’s outcome',
    )
    .option('--after <seq>', 'start after this line number')
    .option(
      '--raw',
      'print the bytes as the engine wrote them (escape sequences included) instead of showing control bytes escaped',
    )
    .action(
      act((ctx, id: string, opts: { follow?: boolean; after?: string; raw?: boolean }) =>
        logsCmd(ctx, id, opts),
      ),
    );

  program
    .command('result')
    .argument('<run-id>', 'the Run ID')
    .description(
      "show a run's score, checks, per-workload timings, and the loss curve (training) or timed samples (decode) as text",
    )
    .option('--wait', 'wait for the run to finish first')
    .option('--timeout <seconds>', 'with --wait: give up after this long (default 3600); exit 6')
    .action(act((ctx, id: string, opts: { wait?: boolean; timeout?: string }) => resultCmd(ctx, id, opts)));

  program
    .command('compare')
    .argument(
      '<run-ids...>',
      'two to six Run IDs of one benchmark; the first is the one the others are measured against',
    )
    .description(
      'runs side by side: score and interval, and per workload TPOT, TTFT, speed-up and spread (decode) or the metrics (training)',
    )
    .action(act((ctx, ids: string[]) => compareCmd(ctx, ids)));

  program
    .command('rank')
    .argument('<run-id>', 'the Run ID')
    .description("where the run's score places on the leaderboard")
    .action(act((ctx, id: string) => rankCmd(ctx, id)));

  program
    .command('cancel')
    .argument('<run-id>', 'the Run ID')
    .requiredOption('--reason <text>', 'why (shown in the run history)')
    .description('cancel a queued or active run')
    .action(act((ctx, id: string, opts: { reason: string }) => cancelCmd(ctx, id, opts)));

  for (const c of program.commands) {
    c.exitOverride().configureOutput({
      writeOut: (s) => deps.streams.stdout.write(s),
      writeErr: (s) => deps.streams.stderr.write(s),
    });
    c.showHelpAfterError('(add --help for usage)');
  }
  return program;
}

/** `--help --json`: the command's usage as one JSON document (for scripts and coding agents). */
function helpJson(program: Command, argv: string[]): unknown {
  const positional = argv.filter((a) => !a.startsWith('-'));
  const sub = program.commands.find((c) => positional[0] === c.name() || c.aliases().includes(positional[0]));
  const cmd = sub ?? program;
  const root = cmd === program;
  return {
    command: root ? 'dryft' : `dryft ${cmd.name()}`,
    usage: `${root ? 'dryft' : `dryft ${cmd.name()}`} ${cmd.usage()}`,
    description: cmd.description(),
    ...(root ? { version: CLI_VERSION } : {}),
    arguments: cmd.registeredArguments.map((a) => ({
      name: a.name(),
      required: a.required,
      description: a.description,
    })),
    options: [...cmd.options, ...(root ? [] : program.options)].map((o) => ({
      flags: o.flags,
      name: o.attributeName(),
      description: o.description,
      takesValue: o.required || o.optional,
      required: o.mandatory,
      ...(o.argChoices ? { choices: o.argChoices } : {}),
    })),
    ...(root
      ? {
          commands: program.commands.map((c) => ({
            name: c.name(),
            usage: `dryft ${c.name()} ${c.usage()}`,
            description: c.description(),
          })),
          exitCodes: Object.fromEntries(Object.entries(EXIT).map(([k, v]) => [v, k])),
        }
      : {}),
  };
}

/** Runs the CLI and returns its exit code; never calls process.exit. */
export async function runCli(argv: string[], deps: CliDeps): Promise<number> {
  let code: number = EXIT.ok;
  const program = build(deps, (c) => (code = c));
  const json = argv.includes('--json');
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.badInput;
    }
    if (json && (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help')) {
      deps.streams.stdout.write(
        JSON.stringify(
          helpJson(
            program,
            argv.filter((a) => a !== 'help'),
          ),
          null,
          2,
        ) + '\n',
      );
      return EXIT.ok;
    }
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exitCode 0; usage errors were already printed.
      return err.exitCode === 0 ? EXIT.ok : EXIT.badInput;
    }
    const e =
      err instanceof CliError
        ? err
        : new CliError(EXIT.server, `Unexpected error: ${(err as Error)?.stack ?? String(err)}`, 'internal');
    if (json) {
      deps.streams.stdout.write(
        JSON.stringify(
          {
            error: {
              code: e.code,
              message: e.message,
              exitCode: e.exitCode,
              // The hub's HTTP status, where the hub answered (a script tells a closed round from a bad token)
              ...(e instanceof ApiError ? { status: e.status } : {}),
              details: e.details,
            },
          },
          null,
          2,
        ) + '\n',
      );
    }
    const colour =
      Boolean(deps.streams.stderr.isTTY) && deps.env.NO_COLOR === undefined && !argv.includes('--no-color');
    const label = colour ? '\u001b[31merror:\u001b[0m' : 'error:';
    deps.streams.stderr.write(`${deps.streams.stderr.isTTY ? '\r\u001b[2K' : ''}${label} ${e.message}\n`);
    return e.exitCode;
  }
}
