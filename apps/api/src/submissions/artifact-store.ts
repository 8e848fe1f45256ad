import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/**
 * Content-addressed storage for submissions (and later outputs): bytes are stored under their
 * sha256, so a re-upload costs nothing and a download can be verified by its address. The disk
 * implementation sits behind this interface so an object store can replace it.
 */
export abstract class ArtifactStore {
  abstract put(bytes: Buffer): Promise<string>;
  abstract read(sha256: string): Promise<Buffer>;
  abstract has(sha256: string): Promise<boolean>;
}

export class DiskArtifactStore extends ArtifactStore {
  constructor(private readonly dir: string) {
    super();
  }

  private pathOf(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return path.join(this.dir, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async put(bytes: Buffer): Promise<string> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const target = this.pathOf(sha256);
    if (await this.has(sha256)) return sha256;
    await fs.mkdir(path.dirname(target), { recursive: true });
    // Write then rename: a reader never sees a half-written artifact.
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    await fs.writeFile(tmp, bytes, { mode: 0o600 });
    await fs.rename(tmp, target);
    return sha256;
  }

  read(sha256: string): Promise<Buffer> {
    return fs.readFile(this.pathOf(sha256));
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await fs.access(this.pathOf(sha256));
      return true;
    } catch {
      return false;
    }
  }
}
