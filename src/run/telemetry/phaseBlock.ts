// One partition of `phases` events as columns (names/nodes/roles interned), and its line parser.
import type { StringTable } from './interning.ts';
import { ByteSliceMap } from './interning.ts';
import type { BadLine } from './lineScan.ts';
import type { PhaseEvent } from './records.ts';
import { OPEN_T1 } from './records.ts';
import { resized } from './columns.ts';
import { bytesOf, cursor, decodeLine, hasExactKeys, isInt, isNum, lineEnd, matchBytes, parsePythonJson, scanNumber, scanPlainString, UNDECODED, utf8Slice } from './lineScan.ts';

const PHASE_KEYS = ['name', 't0', 't1', 'node', 'gpus', 'rank', 'role'] as const;

/** A phases block's columns, as handed between threads. */
export interface PhaseColumns {
  length: number;
  tsMin: number;
  tsMax: number;
  openCount: number;
  gpuLen: number;
  name: Uint32Array;
  node: Uint32Array;
  role: Uint32Array;
  t0: Float64Array;
  t1: Float64Array;
  rank: Int32Array;
  gpuStart: Uint32Array;
  gpuList: Int32Array;
}

/**
 * Phase events of one partition file, in file order. Columns: `name`, `node`, `role` (ids into the
 * store's `strings` table), `t0`, `t1` (`-1` = open marker), `rank`, and the GPU list of row `i`
 * = `gpuList[gpuStart[i] .. gpuStart[i+1])`. `event(i)` materializes one row as a `PhaseEvent`.
 */
export class PhaseBlock {
  readonly stream = 'phases' as const;
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  length = 0;
  tsMin = NaN;
  tsMax = NaN;
  /** Rows with `t1 == -1` (open markers). */
  openCount = 0;
  name: Uint32Array;
  node: Uint32Array;
  role: Uint32Array;
  t0: Float64Array;
  t1: Float64Array;
  rank: Int32Array;
  gpuStart: Uint32Array;
  gpuList: Int32Array;
  private gpuLen = 0;
  private readonly strings: StringTable;

  constructor(key: string, lo: number, hi: number, strings: StringTable, capacity = 256) {
    this.key = key;
    this.lo = lo;
    this.hi = hi;
    this.strings = strings;
    capacity = Math.max(16, capacity);
    this.name = new Uint32Array(capacity);
    this.node = new Uint32Array(capacity);
    this.role = new Uint32Array(capacity);
    this.t0 = new Float64Array(capacity);
    this.t1 = new Float64Array(capacity);
    this.rank = new Int32Array(capacity);
    this.gpuStart = new Uint32Array(capacity + 1);
    this.gpuList = new Int32Array(capacity);
  }

  event(i: number): PhaseEvent {
    const s = this.strings;
    const gpus: number[] = [];
    for (let k = this.gpuStart[i]; k < this.gpuStart[i + 1]; k++) gpus.push(this.gpuList[k]);
    return { name: s.str(this.name[i]), t0: this.t0[i], t1: this.t1[i], node: s.str(this.node[i]), gpus, rank: this.rank[i], role: s.str(this.role[i]) };
  }

  /** The trimmed columns (moved out to another thread, or adopted from one). */
  columns(): PhaseColumns {
    this.trim();
    return {
      length: this.length,
      tsMin: this.tsMin,
      tsMax: this.tsMax,
      openCount: this.openCount,
      gpuLen: this.gpuLen,
      name: this.name,
      node: this.node,
      role: this.role,
      t0: this.t0,
      t1: this.t1,
      rank: this.rank,
      gpuStart: this.gpuStart,
      gpuList: this.gpuList,
    };
  }

  /** A block over columns parsed elsewhere; `stringMap[localId]` gives this store's string id. */
  static adopt(key: string, lo: number, hi: number, strings: StringTable, c: PhaseColumns, stringMap: ArrayLike<number>): PhaseBlock {
    const b = new PhaseBlock(key, lo, hi, strings, 16);
    for (const col of [c.name, c.node, c.role]) for (let i = 0; i < c.length; i++) col[i] = stringMap[col[i]];
    b.name = c.name;
    b.node = c.node;
    b.role = c.role;
    b.t0 = c.t0;
    b.t1 = c.t1;
    b.rank = c.rank;
    b.gpuStart = c.gpuStart;
    b.gpuList = c.gpuList;
    b.gpuLen = c.gpuLen;
    b.length = c.length;
    b.openCount = c.openCount;
    b.tsMin = c.tsMin;
    b.tsMax = c.tsMax;
    return b;
  }

  bytesResident(): number {
    return (
      this.name.byteLength + this.node.byteLength + this.role.byteLength + this.t0.byteLength + this.t1.byteLength + this.rank.byteLength + this.gpuStart.byteLength + this.gpuList.byteLength
    );
  }

  /** Starts a row; GPUs follow through `pushGpu`. */
  begin(name: number, t0: number, t1: number, node: number, rank: number, role: number): void {
    const n = this.length;
    if (n + 1 >= this.name.length) this.grow(n * 2 + 2);
    this.name[n] = name;
    this.t0[n] = t0;
    this.t1[n] = t1;
    this.node[n] = node;
    this.rank[n] = rank;
    this.role[n] = role;
    this.gpuStart[n] = this.gpuLen;
    this.gpuStart[n + 1] = this.gpuLen;
  }

  pushGpu(gpu: number): void {
    if (this.gpuLen === this.gpuList.length) this.gpuList = resized(this.gpuList, this.gpuLen, this.gpuLen * 2);
    this.gpuList[this.gpuLen++] = gpu;
    this.gpuStart[this.length + 1] = this.gpuLen;
  }

  commit(): void {
    const n = this.length;
    const t0 = this.t0[n];
    const t1 = this.t1[n];
    this.length = n + 1;
    if (t1 === OPEN_T1) this.openCount++;
    if (!(t0 >= this.tsMin)) this.tsMin = t0;
    const hi = t1 === OPEN_T1 ? t0 : t1;
    if (!(hi <= this.tsMax)) this.tsMax = hi;
    if (t1 !== OPEN_T1 && !(t1 >= this.tsMin)) this.tsMin = t1;
  }

  trim(): void {
    if (this.name.length > this.length + 16) this.grow(this.length + 1);
    if (this.gpuList.length > this.gpuLen + 16) this.gpuList = this.gpuList.slice(0, Math.max(16, this.gpuLen));
  }

  private grow(cap: number): void {
    const n = this.length;
    // a row to spare (`begin` checks n + 1), and `gpuStart` one more: row i ends at gpuStart[i + 1]
    this.name = resized(this.name, n, cap + 1);
    this.node = resized(this.node, n, cap + 1);
    this.role = resized(this.role, n, cap + 1);
    this.t0 = resized(this.t0, n, cap + 1);
    this.t1 = resized(this.t1, n, cap + 1);
    this.rank = resized(this.rank, n, cap + 1);
    this.gpuStart = resized(this.gpuStart, n + 1, cap + 2);
  }
}

const L_NAME = bytesOf('{"name":"');
const L_T0 = bytesOf(',"t0":');
const L_T1 = bytesOf(',"t1":');
const L_NODE = bytesOf(',"node":"');
const L_GPUS = bytesOf(',"gpus":[');
const L_RANK = bytesOf(',"rank":');
const L_ROLE = bytesOf(',"role":"');

export class PhaseParser {
  private readonly slices = new ByteSliceMap();
  readonly strings: StringTable;

  constructor(strings: StringTable) {
    this.strings = strings;
  }

  /** Last slice and id per field (name, node, role): consecutive rows mostly repeat them. */
  private readonly lastStart = new Int32Array(3).fill(-1);
  private readonly lastEnd = new Int32Array(3).fill(-1);
  private readonly lastId = new Int32Array(3).fill(-1);

  private intern(field: number, buf: Uint8Array, s: number, e: number): number {
    const ls = this.lastStart[field];
    const n = e - s;
    if (ls >= 0 && this.lastEnd[field] - ls === n) {
      let k = 0;
      while (k < n && buf[s + k] === buf[ls + k]) k++;
      if (k === n) return this.lastId[field];
    }
    let id = this.slices.find(buf, s, e);
    if (id < 0) {
      id = this.strings.id(utf8Slice(buf, s, e));
      this.slices.add(buf, s, e, id);
    }
    this.lastStart[field] = s;
    this.lastEnd[field] = e;
    this.lastId[field] = id;
    return id;
  }

  parse(buf: Uint8Array, start: number, end: number, block: PhaseBlock, firstLine: number, bad: BadLine): number {
    // remembered slices point into the previous chunk's bytes: forget them
    this.lastStart.fill(-1);
    let line = firstLine;
    let p = start;
    while (p < end) {
      fast: {
        let i = p;
        if (!matchBytes(buf, i, L_NAME)) break fast;
        const nameS = i + 9;
        const nameE = scanPlainString(buf, nameS, end);
        if (nameE < 0) break fast;
        i = nameE + 1;
        if (!matchBytes(buf, i, L_T0)) break fast;
        const t0 = scanNumber(buf, i + 6, end);
        if (t0 !== t0) break fast;
        i = cursor.pos;
        if (!matchBytes(buf, i, L_T1)) break fast;
        const t1 = scanNumber(buf, i + 6, end);
        if (t1 !== t1) break fast;
        i = cursor.pos;
        if (!matchBytes(buf, i, L_NODE)) break fast;
        const nodeS = i + 9;
        const nodeE = scanPlainString(buf, nodeS, end);
        if (nodeE < 0) break fast;
        i = nodeE + 1;
        if (!matchBytes(buf, i, L_GPUS)) break fast;
        i += 9;
        const gpusAt = i;
        // validate the GPU list before starting the row
        if (buf[i] !== 93) {
          for (;;) {
            const g = scanNumber(buf, i, end);
            if (g !== g || !Number.isInteger(g)) break fast;
            i = cursor.pos;
            if (buf[i] === 44) i++;
            else if (buf[i] === 93) break;
            else break fast;
          }
        }
        i++;
        if (!matchBytes(buf, i, L_RANK)) break fast;
        const rank = scanNumber(buf, i + 8, end);
        if (rank !== rank || !Number.isInteger(rank)) break fast;
        i = cursor.pos;
        if (!matchBytes(buf, i, L_ROLE)) break fast;
        const roleS = i + 9;
        const roleE = scanPlainString(buf, roleS, end);
        if (roleE < 0) break fast;
        if (buf[roleE + 1] !== 125 || buf[roleE + 2] !== 10 || roleE + 2 >= end) break fast;
        block.begin(this.intern(0, buf, nameS, nameE), t0, t1, this.intern(1, buf, nodeS, nodeE), rank, this.intern(2, buf, roleS, roleE));
        i = gpusAt;
        if (buf[i] !== 93) {
          for (;;) {
            block.pushGpu(scanNumber(buf, i, end));
            i = cursor.pos;
            if (buf[i] === 44) i++;
            else break;
          }
        }
        block.commit();
        p = roleE + 3;
        line++;
        continue;
      }
      const nl = lineEnd(buf, p, end);
      this.slowLine(buf, p, nl, block, line, bad);
      p = nl + 1;
      line++;
    }
    return line - firstLine;
  }

  private slowLine(buf: Uint8Array, s: number, e: number, block: PhaseBlock, line: number, bad: BadLine): void {
    const o = decodeLine(buf, s, e, line, bad, parsePythonJson);
    if (o === UNDECODED) return;
    const ev = phaseEventOf(o);
    if (typeof ev === 'string') {
      bad(line, ev);
      return;
    }
    const st = this.strings;
    block.begin(st.id(ev.name), ev.t0, ev.t1, st.id(ev.node), ev.rank, st.id(ev.role));
    for (const g of ev.gpus) block.pushGpu(g);
    block.commit();
  }
}

/** Validates a decoded phases record; returns the event or the reason it is corrupt. */
export function phaseEventOf(o: unknown): PhaseEvent | string {
  if (!hasExactKeys(o, PHASE_KEYS)) return `phases record must have exactly the keys ${PHASE_KEYS.join(', ')}`;
  if (
    typeof o.name !== 'string' ||
    !isNum(o.t0) ||
    !isNum(o.t1) ||
    typeof o.node !== 'string' ||
    !Array.isArray(o.gpus) ||
    !o.gpus.every(isInt) ||
    !isInt(o.rank) ||
    typeof o.role !== 'string'
  ) {
    return 'phases record has a value of the wrong type';
  }
  return o as unknown as PhaseEvent;
}
