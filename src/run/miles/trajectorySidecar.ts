// The trajectory sidecar (`trajectory/{id}.jsonl`): a step's recorded conversations by sample id, re-read
// only when the file changes.
import { stat } from 'node:fs/promises';
import { readRegularFile } from '../../formats/fileAccess.ts';
import type { ConversationRecord } from '../model.ts';
import { DumpInconsistent } from '../errors.ts';
import { Lru } from './lru.ts';
import { checkId, isMissing, type DumpFiles } from './dumpFiles.ts';
import { trajectoryFile } from '../../formats/miles/layout.ts';

export class TrajectorySidecar {
  private readonly read = new Lru<string, { stamp: string; rows: Map<number, ConversationRecord> }>(4);

  constructor(private readonly files: DumpFiles) {}

  /** One step's recorded conversations (sidecar rows, as written) by sample id; null without a sidecar. */
  async conversations(rolloutId: number, evaluation = false): Promise<ReadonlyMap<number, ConversationRecord> | null> {
    checkId('rollout_id', rolloutId);
    const name = trajectoryFile(rolloutId, evaluation);
    const path = await this.files.runPath(name);
    let st;
    try {
      st = await stat(path);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}`;
    let cached = this.read.get(name);
    if (!cached || cached.stamp !== stamp) {
      const text = (await readRegularFile(path)).toString('utf8');
      const rows = new Map<number, ConversationRecord>();
      const lines = text.split('\n');
      lines.forEach((line, i) => {
        if (line.trim() === '') return;
        let row: unknown;
        try {
          row = JSON.parse(line);
        } catch {
          // An unterminated last line is a write in progress; anything else is corruption.
          if (i === lines.length - 1) return;
          throw new DumpInconsistent(name, `line ${i + 1} is not JSON`);
        }
        // Rows are found by sample id (a later line for the same sample wins); a row without one is unreachable.
        const id = (row as { sample_index?: unknown } | null)?.sample_index;
        if (typeof id === 'number') rows.set(id, row as ConversationRecord);
      });
      cached = { stamp, rows };
      this.read.set(name, cached);
    }
    return cached.rows;
  }

  clear(): void {
    this.read.clear();
  }
}
