import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';

/**
 * Changes to the agent fleet (created, connected, drained, revoked), for the organizers' `agents`
 * room. Kept beside the agents rather than on the shared domain bus: only the live gateway listens.
 */
@Injectable()
export class AgentEvents {
  private readonly emitter = new EventEmitter();

  changed(): void {
    this.emitter.emit('changed');
  }

  onChanged(handler: () => void): () => void {
    this.emitter.on('changed', handler);
    return () => this.emitter.off('changed', handler);
  }
}
