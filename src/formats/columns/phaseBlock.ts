// One partition of `phases` events as columns (names/nodes/roles interned), and its line parser.
import type { StringTable } from './interning.ts';
import { ByteSliceMap } from './interning.ts';
import type { BadLine } from './lineScan.ts';
import type { PhaseEvent } from '../dashboard/records.ts';
import { OPEN_T1 } from '../dashboard/layout.ts';
import { gpuProblem, phaseProblem, tsHorizon } from './valueDomain.ts';
import { type BlockColumns, ColumnBlock, GrowableColumn } from './columnBlock.ts';
import { bytesOf, cursor, decodeLine, hasExactKeys, isInt, isNum, lineEnd, matchBytes, parsePythonJson, scanNumber, scanNumberAfter, scanPlainString, UNDECODED, utf8Slice } from './lineScan.ts';

const PHASE_KEYS = ['name', 't0', 't1', 'node', 'gpus', 'rank', 'role'] as const;

const PHASE_SCHEMA = { name: Uint32Array, node: Uint32Array, role: Uint32Array, t0: Float64Array, t1: Float64Array, rank: Int32Array, gpuEnd: Uint32Array } as const;

/** A phases block's columns, as handed between threads: the rows, their open count and the flattened GPU lists. */
export interface PhaseColumns extends BlockColumns<typeof PHASE_SCHEMA> {
  openCount: number;
  gpuLen: number;
  gpuList: Int32Array;
}

/**
 * Phase events of one partition file, in file order. Columns: `name`, `node`, `role` (ids into the
 * store's `strings` table), `t0`, `t1` (`-1` = open marker), `rank`, and the GPU list of row `i`
 * = `gpuList[gpuStart[i] .. gpuStart[i+1])`. `event(i)` materializes one row as a `PhaseEvent`.
 */
export class PhaseBlock extends ColumnBlock<typeof PHASE_SCHEMA> {
  readonly stream = 'phases' as const;
  /** Rows with `t1 == -1` (open markers). */
  openCount = 0;
  private readonly gpus = new GrowableColumn<Int32Array>(Int32Array as unknown as new (n: number) => Int32Array);
  private gpuStartCache: { n: number; starts: Uint32Array } | null = null;
  private readonly strings: StringTable;

  constructor(key: string, lo: number, hi: number, strings: StringTable, capacity = 256) {
    super(PHASE_SCHEMA, key, lo, hi, capacity);
    this.strings = strings;
  }

  get name(): Uint32Array {
    return this.live('name');
  }
  get node(): Uint32Array {
    return this.live('node');
  }
  get role(): Uint32Array {
    return this.live('role');
  }
  get t0(): Float64Array {
    return this.live('t0');
  }
  get t1(): Float64Array {
    return this.live('t1');
  }
  get rank(): Int32Array {
    return this.live('rank');
  }

  /** Row `i`'s GPUs are `gpuList[gpuStart[i] .. gpuStart[i+1])` (length + 1 entries). */
  get gpuStart(): Uint32Array {
    const n = this.length;
    if (this.gpuStartCache?.n !== n) {
      const starts = new Uint32Array(n + 1);
      starts.set(this.cols.gpuEnd.subarray(0, n), 1);
      this.gpuStartCache = { n, starts };
    }
    return this.gpuStartCache.starts;
  }

  get gpuList(): Int32Array {
    return this.gpus.values.subarray(0, this.gpus.length);
  }

  event(i: number): PhaseEvent {
    const s = this.strings;
    const c = this.cols;
    const gpus: number[] = [];
    const list = this.gpus.values;
    for (let k = i === 0 ? 0 : c.gpuEnd[i - 1]; k < c.gpuEnd[i]; k++) gpus.push(list[k]);
    return { name: s.str(c.name[i]), t0: c.t0[i], t1: c.t1[i], node: s.str(c.node[i]), gpus, rank: c.rank[i], role: s.str(c.role[i]) };
  }

  override columns(trim = true): PhaseColumns {
    if (trim) this.gpus.trim();
    return { ...super.columns(trim), openCount: this.openCount, gpuLen: this.gpus.length, gpuList: this.gpus.values };
  }

  /** A block over columns parsed elsewhere; `stringMap[localId]` gives this store's string id. */
  static adopt(key: string, lo: number, hi: number, strings: StringTable, c: PhaseColumns, stringMap: ArrayLike<number>): PhaseBlock {
    const b = new PhaseBlock(key, lo, hi, strings, 16);
    for (const col of [c.cols.name, c.cols.node, c.cols.role]) for (let i = 0; i < c.length; i++) col[i] = stringMap[col[i]];
    b.adoptColumns(PHASE_SCHEMA, c);
    b.gpus.adopt(c.gpuList, c.gpuLen);
    b.openCount = c.openCount;
    return b;
  }

  /** The buffers of `columns()`, for a transfer list. */
  static transferablesOf(c: PhaseColumns): ArrayBuffer[] {
    return [...ColumnBlock.transferables(c), c.gpuList.buffer as ArrayBuffer];
  }

  override bytesResident(): number {
    return super.bytesResident() + this.gpus.byteLength + (this.gpuStartCache?.starts.byteLength ?? 0);
  }

  /** Starts a row; GPUs follow through `pushGpu`, then `commit`. */
  begin(name: number, t0: number, t1: number, node: number, rank: number, role: number): void {
    const n = this.length;
    if (n === this.cap) this.reserve(1);
    const c = this.cols;
    c.name[n] = name;
    c.t0[n] = t0;
    c.t1[n] = t1;
    c.node[n] = node;
    c.rank[n] = rank;
    c.role[n] = role;
  }

  pushGpu(gpu: number): void {
    this.gpus.push(gpu);
  }

  commit(): void {
    const n = this.length;
    const c = this.cols;
    c.gpuEnd[n] = this.gpus.length;
    const t0 = c.t0[n];
    const t1 = c.t1[n];
    this.length = n + 1;
    if (t1 === OPEN_T1) this.openCount++;
    // the bounds a reader windows on: t0 and t1 of closed intervals, only t0 of open markers
    if (!(t0 >= this.tsMin)) this.tsMin = t0;
    const hi = t1 === OPEN_T1 ? t0 : t1;
    if (!(hi <= this.tsMax)) this.tsMax = hi;
    if (t1 !== OPEN_T1 && !(t1 >= this.tsMin)) this.tsMin = t1;
  }

  override trim(): void {
    super.trim();
    this.gpus.trim();
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
    const horizon = tsHorizon();
    // remembered slices point into the previous chunk's bytes: forget them
    this.lastStart.fill(-1);
    let line = firstLine;
    for (let p = start; p < end; line++) {
      fast: {
        let i = p;
        if (!matchBytes(buf, i, L_NAME)) break fast;
        const nameS = i + 9;
        const nameE = scanPlainString(buf, nameS, end);
        if (nameE < 0) break fast;
        i = nameE + 1;
        const t0 = scanNumberAfter(buf, i, L_T0, end);
        if (t0 !== t0) break fast;
        const t1 = scanNumberAfter(buf, cursor.pos, L_T1, end);
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
        const rank = scanNumberAfter(buf, i, L_RANK, end);
        if (rank !== rank || !Number.isInteger(rank)) break fast;
        i = cursor.pos;
        if (!matchBytes(buf, i, L_ROLE)) break fast;
        const roleS = i + 9;
        const roleE = scanPlainString(buf, roleS, end);
        if (roleE < 0) break fast;
        if (buf[roleE + 1] !== 125 || buf[roleE + 2] !== 10 || roleE + 2 >= end) break fast;
        const why = phaseProblem(t0, t1, OPEN_T1, horizon) ?? this.gpusProblem(buf, gpusAt, end);
        if (why !== null) {
          bad(line, why);
          p = roleE + 3;
          continue;
        }
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
        continue;
      }
      const nl = lineEnd(buf, p, end);
      this.slowLine(buf, p, nl, block, line, bad);
      p = nl + 1;
    }
    return line - firstLine;
  }

  /** The first GPU index of a validated `[…]` list at `i` outside its domain, in words, or null. */
  private gpusProblem(buf: Uint8Array, i: number, end: number): string | null {
    if (buf[i] === 93) return null;
    for (;;) {
      const why = gpuProblem(scanNumber(buf, i, end));
      if (why !== null) return why;
      i = cursor.pos;
      if (buf[i] === 44) i++;
      else return null;
    }
  }

  private slowLine(buf: Uint8Array, s: number, e: number, block: PhaseBlock, line: number, bad: BadLine): void {
    const o = decodeLine(buf, s, e, line, bad, parsePythonJson);
    if (o === UNDECODED) return;
    const ev = phaseEventOf(o);
    if (typeof ev === 'string') {
      bad(line, ev);
      return;
    }
    const why = phaseProblem(ev.t0, ev.t1, OPEN_T1, tsHorizon()) ?? ev.gpus.map(gpuProblem).find((x) => x !== null) ?? null;
    if (why !== null) {
      bad(line, why);
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
