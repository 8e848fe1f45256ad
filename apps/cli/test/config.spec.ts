import { mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { configPath, loadSettings, writeConfig } from '../src/config';
import { Output } from '../src/output';
import { cli, TOKEN } from './helpers';

describe('config file', () => {
  it('lives under $XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x/cfg', HOME: '/home/u' })).toBe('/x/cfg/dryft/config.json');
    expect(configPath({ HOME: '/home/u' })).toBe('/home/u/.config/dryft/config.json');
    // A relative XDG_CONFIG_HOME is invalid per the spec and ignored.
    expect(configPath({ XDG_CONFIG_HOME: 'rel', HOME: '/home/u' })).toBe('/home/u/.config/dryft/config.json');
  });

  it('is written 0600 in a 0700 folder, replacing a looser file', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'dryft-cfg-'));
    const file = path.join(home, 'dryft', 'config.json');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '{}', { mode: 0o644 });
    await writeConfig(file, { token: TOKEN });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(TOKEN);
  });

  it('DRYFT_TOKEN beats the saved token; --api-url beats DRYFT_API_URL beats the file', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'dryft-cfg-'));
    await writeConfig(path.join(home, 'dryft', 'config.json'), { token: 'saved', apiUrl: 'http://file:1' });
    const base = { XDG_CONFIG_HOME: home };
    expect((await loadSettings(base, {})).token).toBe('saved');
    expect((await loadSettings(base, {})).apiUrl).toBe('http://file:1');
    expect((await loadSettings({ ...base, DRYFT_TOKEN: 'env' }, {})).tokenSource).toBe('DRYFT_TOKEN');
    expect((await loadSettings({ ...base, DRYFT_API_URL: 'http://env:2/' }, {})).apiUrl).toBe('http://env:2');
    expect(
      (await loadSettings({ ...base, DRYFT_API_URL: 'http://env:2' }, { apiUrl: 'http://flag:3' })).apiUrl,
    ).toBe('http://flag:3');
    await expect(loadSettings({ ...base, DRYFT_API_URL: 'ftp://x' }, {})).rejects.toThrow(
      /not an http\(s\) URL/,
    );
  });

  it('login reads the token from stdin, refuses a malformed one, and logout removes it', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'dryft-cfg-'));
    const env = { XDG_CONFIG_HOME: home };
    const bad = await cli(['login', '--no-verify'], env, { stdin: 'dryft_pat_nope\n' });
    expect(bad.code).toBe(3);
    const ok = await cli(['login', '--no-verify'], env, { stdin: `${TOKEN}\n` });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout + ok.stderr).not.toContain(TOKEN);
    expect(JSON.parse(readFileSync(path.join(home, 'dryft', 'config.json'), 'utf8')).token).toBe(TOKEN);
    expect((await cli(['logout'], env)).stdout).toContain('Removed');
    expect(JSON.parse(readFileSync(path.join(home, 'dryft', 'config.json'), 'utf8')).token).toBeUndefined();
  });
});

describe('output', () => {
  const streams = (tty: boolean) => {
    const stdout = Object.assign(new PassThrough(), { isTTY: tty });
    const stderr = Object.assign(new PassThrough(), { isTTY: tty, columns: 80 });
    return { stdout, stderr, stdin: new PassThrough() };
  };

  it('colours only on a terminal and never with NO_COLOR', () => {
    expect(new Output(streams(true), {}, false).paint('red', 'x')).toBe('\u001b[31mx\u001b[0m');
    expect(new Output(streams(false), {}, false).paint('red', 'x')).toBe('x');
    expect(new Output(streams(true), { NO_COLOR: '' }, false).paint('red', 'x')).toBe('x');
    expect(new Output(streams(true), {}, false, true).paint('red', 'x')).toBe('x');
  });

  it('draws progress on a terminal stderr only', () => {
    const tty = streams(true);
    let err = '';
    tty.stderr.on('data', (c) => (err += c));
    new Output(tty, {}, false).progress('uploading [####----]');
    expect(err).toContain('uploading');
    const pipe = streams(false);
    let perr = '';
    pipe.stderr.on('data', (c) => (perr += c));
    new Output(pipe, {}, false).progress('uploading');
    expect(perr).toBe('');
  });
});
