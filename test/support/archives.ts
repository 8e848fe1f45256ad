import * as path from 'node:path';
import { packFiles, packFolder } from '@dryft/libs/node';
import { ROOT } from './hub';

export const toyStarter = () => packFolder(path.join(ROOT, 'starters/toy-decode/engine'));
export const qwenStarter = () => packFolder(path.join(ROOT, 'starters/qwen3-4b-decode/engine'));

export function archiveOf(files: Record<string, string | Buffer>): Buffer {
  return packFiles(
    Object.entries(files).map(([name, content]) => ({
      name,
      content: typeof content === 'string' ? Buffer.from(content) : content,
    })),
  );
}
