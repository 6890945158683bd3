// What the collector holds of one stream between flushes: encoded lines (with their hour for the
// partitioned streams), bounded so a stuck disk costs memory up to a cap and never more.

/** At the cap, the oldest tenth goes (one drop per tenth of the cap, not one per record). */
export const DROP_FRACTION = 0.1;

export class StreamBuffer {
  lines: string[] = [];
  /** Hour number (`floor(ts / 3600)`) of each line; empty for flat streams. */
  hours: number[] = [];
  /** Records dropped since the last flush reported them. */
  droppedSinceReport = 0;

  constructor(
    readonly cap: number,
    readonly partitioned: boolean,
  ) {}

  get length(): number {
    return this.lines.length;
  }

  /** Adds one line; returns how many old lines it pushed out. */
  push(line: string, hour: number): number {
    let dropped = 0;
    if (this.lines.length >= this.cap) {
      dropped = Math.max(1, Math.floor(this.lines.length * DROP_FRACTION));
      this.lines.splice(0, dropped);
      if (this.partitioned) this.hours.splice(0, dropped);
      this.droppedSinceReport += dropped;
    }
    this.lines.push(line);
    if (this.partitioned) this.hours.push(hour);
    return dropped;
  }

  /** Lines grouped per hour, hours ascending, file order kept within an hour (flat streams: one group, hour 0). */
  groups(): { hour: number; lines: string[] }[] {
    if (!this.partitioned) return this.lines.length ? [{ hour: 0, lines: this.lines }] : [];
    const byHour = new Map<number, string[]>();
    let lastHour = NaN;
    let last: string[] = [];
    for (let i = 0; i < this.lines.length; i++) {
      const h = this.hours[i];
      if (h !== lastHour) {
        lastHour = h;
        last = byHour.get(h) ?? [];
        if (last.length === 0) byHour.set(h, last);
      }
      last.push(this.lines[i]);
    }
    return [...byHour.entries()].sort((a, b) => a[0] - b[0]).map(([hour, lines]) => ({ hour, lines }));
  }

  /** Replaces the content with the groups that were not written. */
  keepOnly(groups: readonly { hour: number; lines: string[] }[]): void {
    this.lines = [];
    this.hours = [];
    for (const g of groups) {
      for (const l of g.lines) {
        this.lines.push(l);
        if (this.partitioned) this.hours.push(g.hour);
      }
    }
  }
}
