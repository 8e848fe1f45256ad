import { describe, expect, it } from 'vitest';
import { packFiles } from '@dryft/libs/node';
import {
  languageOf,
  SHOWN_FILE_BYTES,
  submissionFiles,
} from '../../apps/api/src/submissions/submission-files';

describe('submissionFiles: what the code view shows of a stored submission', () => {
  it('shows text files in the archive’s order, with a language from the extension', async () => {
    const archive = packFiles([
      { name: 'engine.py', content: Buffer.from('class Engine: ...\n') },
      { name: 'conf/settings.yaml', content: Buffer.from('a: 1\n') },
      { name: 'NOTES', content: Buffer.from('plain') },
    ]);
    // (packFiles writes them sorted, as every stored archive of the CLI and the web is)
    expect(await submissionFiles('archive', archive)).toEqual([
      { path: 'NOTES', size: 5, language: 'text', text: 'plain', omitted: null },
      { path: 'conf/settings.yaml', size: 5, language: 'yaml', text: 'a: 1\n', omitted: null },
      { path: 'engine.py', size: 18, language: 'python', text: 'class Engine: ...\n', omitted: null },
    ]);
  });

  it('lists but does not show a file that is not UTF-8 text, holds NUL, or is too large', async () => {
    const archive = packFiles([
      { name: 'latin1.txt', content: Buffer.from([0x63, 0x61, 0x66, 0xe9]) },
      { name: 'nul.json', content: Buffer.from('{"a":\u0000}') },
      { name: 'big.md', content: Buffer.alloc(SHOWN_FILE_BYTES + 1, 'a') },
    ]);
    const files = await submissionFiles('archive', archive);
    expect(files.map((f) => [f.path, f.text, f.omitted])).toEqual([
      ['big.md', null, 'too_large'],
      ['latin1.txt', null, 'binary'],
      ['nul.json', null, 'binary'],
    ]);
  });

  it('shows a single-file submission as submission.py', async () => {
    expect(await submissionFiles('file', Buffer.from('print(1)\n'))).toEqual([
      { path: 'submission.py', size: 9, language: 'python', text: 'print(1)\n', omitted: null },
    ]);
  });

  it('names languages by extension, case-insensitively', () => {
    expect(['a.PY', 'b.md', 'c.json', 'd.yml', 'e.toml', 'f.sh', 'g.cfg'].map(languageOf)).toEqual([
      'python',
      'markdown',
      'json',
      'yaml',
      'toml',
      'shell',
      'text',
    ]);
  });
});
