// One byte budget for the raw partition columns of every stream of a store: a least-recently-used
// order across all of them, so a whole-run pass over one stream pushes out the others' cold hours
// rather than growing the process.

/** A cache whose entries the budget may ask to drop. */
export interface BudgetOwner {
  /** Drops the entry (it is read again when next needed). */
  release(key: string): void;
}

export class MemoryBudget {
  private readonly entries = new Map<string, { owner: BudgetOwner; key: string; bytes: number }>();
  private total = 0;
  private readonly owners = new Map<BudgetOwner, number>();

  /** `bytes`: what the resident entries may hold together; the newest entry is always kept. */
  constructor(readonly bytes: number) {}

  private id(owner: BudgetOwner, key: string): string {
    let n = this.owners.get(owner);
    if (n === undefined) this.owners.set(owner, (n = this.owners.size));
    return `${n}\u0000${key}`;
  }

  /** Marks an entry used now with its current size, then drops the least recently used over budget. */
  touch(owner: BudgetOwner, key: string, bytes: number): void {
    const id = this.id(owner, key);
    const e = this.entries.get(id);
    if (e !== undefined) {
      this.total -= e.bytes;
      this.entries.delete(id);
    }
    this.entries.set(id, { owner, key, bytes });
    this.total += bytes;
    this.shrink();
  }

  /** Forgets an entry its owner dropped itself. */
  forget(owner: BudgetOwner, key: string): void {
    const id = this.id(owner, key);
    const e = this.entries.get(id);
    if (e === undefined) return;
    this.total -= e.bytes;
    this.entries.delete(id);
  }

  /** Bytes held by the entries now. */
  get used(): number {
    return this.total;
  }

  private shrink(): void {
    while (this.total > this.bytes && this.entries.size > 1) {
      const [id, e] = this.entries.entries().next().value as [string, { owner: BudgetOwner; key: string; bytes: number }];
      this.entries.delete(id);
      this.total -= e.bytes;
      e.owner.release(e.key);
    }
  }
}
