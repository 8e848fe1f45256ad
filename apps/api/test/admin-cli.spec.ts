import { describe, expect, it } from 'vitest';
import { AdminCliError, parseAgentTokenArgs } from '../src/admin-cli/agent-token';

describe('dryft-admin agent-token arguments', () => {
  it('reads the name, the file (or - for standard output) and --rotate', () => {
    expect(parseAgentTokenArgs(['--name', 'gpu-1', '--out', '/run/dryft-agent/token'])).toEqual({
      name: 'gpu-1',
      out: '/run/dryft-agent/token',
      rotate: false,
    });
    expect(parseAgentTokenArgs(['--rotate', '--out', '-', '--name', 'h200.box_2'])).toEqual({
      name: 'h200.box_2',
      out: '-',
      rotate: true,
    });
  });

  it('refuses what it cannot act on, as a usage error saying what to give', () => {
    const refusal = (argv: string[]) => {
      try {
        parseAgentTokenArgs(argv);
      } catch (err) {
        expect(err).toBeInstanceOf(AdminCliError);
        expect((err as AdminCliError).usage).toBe(true);
        return (err as Error).message;
      }
      throw new Error(`accepted ${argv.join(' ')}`);
    };
    expect(refusal(['--out', 'f'])).toMatch(/--name NAME is required/);
    expect(refusal(['--name', 'gpu-1'])).toMatch(/--out FILE is required: where the agent reads its token/);
    expect(refusal(['--name', '--out', 'f'])).toBe('--name needs a value');
    expect(refusal(['--name', 'gpu 1', '--out', 'f'])).toMatch(/--name "gpu 1": use 1-64 letters/);
    expect(refusal(['--name', '-x', '--out', 'f'])).toMatch(/starting with a letter or digit/);
    expect(refusal(['--name', 'gpu-1', '--out', 'f', '--force'])).toBe('unknown argument "--force"');
  });
});
