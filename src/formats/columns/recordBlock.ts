// One partition of a low-volume stream (`trajectories`, `gpu_processes`) kept as validated records.
import type { BadLine } from './lineScan.ts';
import type { GpuProcessSample, TrajectoryEvent } from '../dashboard/records.ts';
import { decodeLine, hasExactKeys, isInt, isNum, lineEnd, parsePythonJson, UNDECODED } from './lineScan.ts';

export class RecordBlock<T extends { ts: number }> {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  /** Records in file order. */
  readonly rows: T[] = [];
  tsMin = NaN;
  tsMax = NaN;

  constructor(key: string, lo: number, hi: number) {
    this.key = key;
    this.lo = lo;
    this.hi = hi;
  }

  get length(): number {
    return this.rows.length;
  }

  push(r: T): void {
    this.rows.push(r);
    if (!(r.ts >= this.tsMin)) this.tsMin = r.ts;
    if (!(r.ts <= this.tsMax)) this.tsMax = r.ts;
  }

  trim(): void {}

  /** A block over records parsed elsewhere. */
  static adopt<T extends { ts: number }>(key: string, lo: number, hi: number, rows: T[]): RecordBlock<T> {
    const b = new RecordBlock<T>(key, lo, hi);
    for (const r of rows) b.push(r);
    return b;
  }

  bytesResident(): number {
    return this.rows.length * 120;
  }
}

/** Turns a decoded line into a record, or says why it is corrupt. */
export type RecordValidator<T> = (o: unknown) => T | string;

const TRAJECTORY_KEYS = ['ts', 'kind', 'sample_index', 'group_index', 'turn', 'weight_version', 'detail'] as const;
const GPU_PROCESS_KEYS = ['ts', 'node', 'gpu', 'pid', 'name', 'mem_mb'] as const;

export const trajectoryEventOf: RecordValidator<TrajectoryEvent> = (o) => {
  if (!hasExactKeys(o, TRAJECTORY_KEYS)) return `trajectories record must have exactly the keys ${TRAJECTORY_KEYS.join(', ')}`;
  if (!isNum(o.ts) || typeof o.kind !== 'string' || !isInt(o.sample_index) || !isInt(o.group_index) || !isInt(o.turn) || typeof o.weight_version !== 'string' || typeof o.detail !== 'string') {
    return 'trajectories record has a value of the wrong type';
  }
  return o as unknown as TrajectoryEvent;
};

export const gpuProcessOf: RecordValidator<GpuProcessSample> = (o) => {
  if (!hasExactKeys(o, GPU_PROCESS_KEYS)) return `gpu_processes record must have exactly the keys ${GPU_PROCESS_KEYS.join(', ')}`;
  if (!isNum(o.ts) || typeof o.node !== 'string' || !isInt(o.gpu) || !isInt(o.pid) || typeof o.name !== 'string' || !isNum(o.mem_mb)) {
    return 'gpu_processes record has a value of the wrong type';
  }
  return o as unknown as GpuProcessSample;
};

/** Parses complete lines with JSON.parse + a validator into a `RecordBlock`. */
export function parseRecordLines<T extends { ts: number }>(
  validate: RecordValidator<T>,
  buf: Uint8Array,
  start: number,
  end: number,
  block: RecordBlock<T>,
  firstLine: number,
  bad: BadLine,
): number {
  let line = firstLine;
  let p = start;
  while (p < end) {
    const nl = lineEnd(buf, p, end);
    const o = decodeLine(buf, p, nl, line, bad, parsePythonJson);
    if (o !== UNDECODED) {
      const r = validate(o);
      if (typeof r === 'string') bad(line, r);
      else block.push(r);
    }
    p = nl + 1;
    line++;
  }
  return line - firstLine;
}
