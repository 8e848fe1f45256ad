import { DataSource, EntityManager } from 'typeorm';

/**
 * Base for repositories whose operations must sometimes share one transaction. `transaction()`
 * hands the callback a copy of the repository bound to the transaction's entity manager, so
 * services express "these writes together" without touching TypeORM.
 */
export abstract class TransactionalRepository {
  protected manager: EntityManager;

  constructor(protected readonly dataSource: DataSource) {
    this.manager = dataSource.manager;
  }

  /** The entity manager in use (the transaction's inside `transaction()`), for writes that must join it. */
  currentManager(): EntityManager {
    return this.manager;
  }

  /** A copy of this repository that joins the transaction `tx` runs in (another repository's). */
  within(tx: TransactionalRepository): this {
    const bound = Object.create(Object.getPrototypeOf(this)) as this;
    Object.assign(bound, this, { manager: tx.currentManager() });
    return bound;
  }

  transaction<T>(work: (tx: this) => Promise<T>): Promise<T> {
    return this.dataSource.transaction((manager) => {
      const bound = Object.create(Object.getPrototypeOf(this)) as this;
      Object.assign(bound, this, { manager });
      return work(bound);
    });
  }
}
