import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../common/principal';
import { CliService } from './cli.service';

/**
 * The `dryft` CLI for the starter's installers: one bundled file (Node ≥ 20 runs it) and its
 * sha256, which the installers check before putting bin/dryft in place. Public: the CLI is no secret.
 */
@Controller('api/cli')
export class CliController {
  constructor(private readonly cli: CliService) {}

  @Public()
  @Get('dryft.cjs')
  async bundle(@Res() res: Response): Promise<void> {
    const bundle = await this.cli.bundle();
    res.setHeader('Content-Type', 'application/javascript; charset=utf-8');
    res.setHeader('Content-Disposition', 'attachment; filename="dryft.cjs"');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Dryft-Sha256', bundle.sha256);
    res.send(bundle.bytes);
  }

  @Public()
  @Get('dryft.cjs.sha256')
  async checksum(@Res() res: Response): Promise<void> {
    const bundle = await this.cli.bundle();
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.send(bundle.checksumLine);
  }
}
