// One hour of `gpu_util` samples as columns (≤ 16 bytes per row resident), and its line parser.
import type { LaneTable } from './interning.ts';
import { ByteSliceMap } from './interning.ts';
import { type BlockColumns, type Column, ColumnBlock, type ColumnsOf } from './columnBlock.ts';
import type { BadLine } from './lineScan.ts';
import { type TimeBounds, UNBOUNDED } from './timeBounds.ts';
import { gpuRowProblem, tsHorizon } from './valueDomain.ts';
import { bytesOf, cursor, decodeLine, hasExactKeys, isInt, isNum, lineEnd, matchBytes, scanNumber, scanNumberAfter, scanPlainString, UNDECODED, utf8Slice } from './lineScan.ts';

const GPU_KEYS = ['ts', 'node', 'gpu', 'util', 'mem_mb', 'power_w'] as const;
/** Compact blocks pack mem_mb and power_w in one u32: mem in the low `MEM_BITS` bits, power above. */
export const MEM_BITS = 20;
export const MEM_MASK = (1 << MEM_BITS) - 1;
const POWER_MAX = (1 << (32 - MEM_BITS)) - 1;

const COMPACT = { ts: Float64Array, lane: Uint16Array, util: Uint8Array, memPower: Uint32Array } as const;
const WIDE = { ts: Float64Array, lane: Uint16Array, util: Float64Array, mem: Float64Array, power: Float64Array } as const;
type GpuSchema = typeof COMPACT | typeof WIDE;

/** A gpu_util block's columns, as handed between threads (compact or wide schema). */
export type GpuUtilColumns = BlockColumns<GpuSchema>;

/**
 * Rows of one gpu_util partition file, in file order: `ts`, `lane` (store-wide lane ids:
 * `store.lanes.node(id)`, `store.lanes.gpu(id)`), `util`, and `memMb(i)` / `powerW(i)`.
 * Normally util is a Uint8Array and mem_mb/power_w share one u32 (mem in 20 bits, power in 12):
 * 8 + 2 + 1 + 4 = 15 bytes a row. A block holding any value outside that (non-integer, > 255 %,
 * ≥ 1 TiB, ≥ 4096 W) switches to the wide Float64 schema, so values are never altered.
 */
export class GpuUtilBlock extends ColumnBlock<GpuSchema> {
  readonly stream = 'gpu_util' as const;
  private laneRowsCache: { n: number; offsets: Uint32Array; rows: Uint32Array } | null = null;

  constructor(key: string, lo: number, hi: number, capacity = 1024) {
    super(COMPACT, key, lo, hi, capacity);
  }

  get wide(): boolean {
    return this.schema === WIDE;
  }

  /** `ts` column (view over the live rows). */
  get ts(): Float64Array {
    return this.live('ts');
  }

  /** Store-wide lane id per row (see `TelemetryStore.lanes`). */
  get lane(): Uint16Array {
    return this.live('lane');
  }

  /** util % per row. */
  get util(): Uint8Array | Float64Array {
    return this.live('util');
  }

  memMb(i: number): number {
    const c = this.cols as Record<string, Column>;
    return this.schema === COMPACT ? c.memPower[i] & MEM_MASK : c.mem[i];
  }

  powerW(i: number): number {
    const c = this.cols as Record<string, Column>;
    return this.schema === COMPACT ? c.memPower[i] >>> MEM_BITS : c.power[i];
  }

  /** The block's rows grouped by lane id: rows of lane `l` are `rows[offsets[l] .. offsets[l+1])`, in file order. */
  laneRows(): { offsets: Uint32Array; rows: Uint32Array } {
    const n = this.length;
    if (this.laneRowsCache && this.laneRowsCache.n === n) return this.laneRowsCache;
    const lane = this.cols.lane;
    let maxLane = 0;
    for (let i = 0; i < n; i++) if (lane[i] > maxLane) maxLane = lane[i];
    const offsets = new Uint32Array(maxLane + 2);
    for (let i = 0; i < n; i++) offsets[lane[i] + 1]++;
    for (let l = 0; l <= maxLane; l++) offsets[l + 1] += offsets[l];
    const fill = offsets.slice(0, maxLane + 1);
    const rows = new Uint32Array(n);
    for (let i = 0; i < n; i++) rows[fill[lane[i]]++] = i;
    this.laneRowsCache = { n, offsets, rows };
    return this.laneRowsCache;
  }

  /** A block over columns parsed elsewhere; `laneMap[localLane]` gives this store's lane id. */
  static adopt(key: string, lo: number, hi: number, c: GpuUtilColumns, laneMap: ArrayLike<number>): GpuUtilBlock {
    const b = new GpuUtilBlock(key, lo, hi, 16);
    const lane = c.cols.lane;
    for (let i = 0; i < c.length; i++) lane[i] = laneMap[lane[i]];
    b.adoptColumns('memPower' in c.cols ? COMPACT : WIDE, c);
    return b;
  }

  /** One block of the rows of `parts` in order (pieces of one file parsed apart); wide if any part is. */
  static join(key: string, lo: number, hi: number, parts: readonly GpuUtilBlock[]): GpuUtilBlock {
    const b = new GpuUtilBlock(key, lo, hi, parts.reduce((n, p) => n + p.length, 0));
    if (parts.some((p) => p.wide)) b.widen();
    for (const p of parts) {
      if (b.wide && !p.wide) p.widen();
      b.appendRows(p);
    }
    return b;
  }

  override bytesResident(): number {
    let b = super.bytesResident();
    if (this.laneRowsCache) b += this.laneRowsCache.offsets.byteLength + this.laneRowsCache.rows.byteLength;
    return b;
  }

  push(ts: number, lane: number, util: number, mem: number, power: number): void {
    const n = this.length;
    if (n === this.cap) this.reserve(1);
    if (
      this.schema === COMPACT &&
      // -0 passes the integer tests but an unsigned column would store it as 0
      !(util >= 0 && util <= 255 && (util | 0) === util && mem >= 0 && mem <= MEM_MASK && (mem | 0) === mem && power >= 0 && power <= POWER_MAX && (power | 0) === power) ||
      Object.is(util, -0) ||
      Object.is(mem, -0) ||
      Object.is(power, -0)
    ) {
      this.widen();
    }
    const c = this.cols as Record<string, Column>;
    c.ts[n] = ts;
    c.lane[n] = lane;
    c.util[n] = util;
    if (this.schema === COMPACT) {
      c.memPower[n] = (mem | (power << MEM_BITS)) >>> 0;
    } else {
      c.mem[n] = mem;
      c.power[n] = power;
    }
    this.length = n + 1;
    this.noteTs(ts);
  }

  private widen(): void {
    this.retype(WIDE, (from, to, n) => {
      const f = from as ColumnsOf<typeof COMPACT>;
      to.ts.set(f.ts.subarray(0, n));
      to.lane.set(f.lane.subarray(0, n));
      for (let i = 0; i < n; i++) {
        to.util[i] = f.util[i];
        to.mem[i] = f.memPower[i] & MEM_MASK;
        to.power[i] = f.memPower[i] >>> MEM_BITS;
      }
    });
  }
}

const L_TS = bytesOf('{"ts":');
const L_NODE = bytesOf(',"node":"');
const L_UTIL = bytesOf(',"util":');
const L_MEM = bytesOf(',"mem_mb":');
const L_POWER = bytesOf(',"power_w":');

/**
 * A non-negative JSON integer of up to 9 digits at `i` followed by neither `.` nor an exponent
 * (`cursor.pos` set past it); -1 for anything else (the caller's general path decides).
 */
function scanSmallInt(buf: Uint8Array, i: number, end: number): number {
  const start = i;
  let c = buf[i];
  if (c === 48) {
    c = buf[++i];
  } else {
    let v = 0;
    while (c >= 48 && c <= 57 && i < end) {
      v = v * 10 + (c - 48);
      c = buf[++i];
    }
    if (i === start || i - start > 9 || c === 46 || c === 101 || c === 69) return -1;
    cursor.pos = i;
    return v;
  }
  if ((c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69) return -1;
  cursor.pos = i;
  return 0;
}

/** What `placeNode` read: the gpu index. */
const place = { gpu: 0 };

/** The values `scanReadings` read (scratch objects, like `cursor`: no allocation per row). */
const readings = { util: 0, mem: 0, power: 0 };

/**
 * Reads `,"util":…,"mem_mb":…,"power_w":…}\n` at `i` into `readings`; the index past the `\n`, or -1
 * when the line is not in that simple shape.
 */
function scanReadings(buf: Uint8Array, i: number, end: number): number {
  const util = scanNumberAfter(buf, i, L_UTIL, end);
  if (util !== util) return -1;
  const mem = scanNumberAfter(buf, cursor.pos, L_MEM, end);
  if (mem !== mem) return -1;
  const power = scanNumberAfter(buf, cursor.pos, L_POWER, end);
  if (power !== power) return -1;
  i = cursor.pos;
  if (buf[i] !== 125 || buf[i + 1] !== 10 || i + 1 >= end) return -1;
  readings.util = util;
  readings.mem = mem;
  readings.power = power;
  return i + 2;
}

/** Lines read whole after one inside the bounds before a bounded read looks for lines outside them again. */
const RETRY_OUTSIDE_LINES = 64;

/**
 * The start of the first line at or after `p` (a line start) whose stamp may lie inside `[from, to]`, `cursor.pos`
 * the lines passed over: those starting `{"ts":` with a plain stamp (digits, at most 15 before an optional
 * fraction, no exponent, then a comma). Such a stamp is parsed to a double within one of its whole part W, so
 * it is below `from` when W + 1 < from and above `to` when W > to, whatever its fraction.
 */
function linesOutside(buf: Uint8Array, p: number, end: number, from: number, to: number): number {
  let skipped = 0;
  while (p < end) {
    if (buf[p] !== 123 || buf[p + 1] !== 34 || buf[p + 2] !== 116 || buf[p + 3] !== 115 || buf[p + 4] !== 34 || buf[p + 5] !== 58) break;
    let i = p + 6;
    let c = buf[i];
    if (c === 48 && buf[i + 1] >= 48 && buf[i + 1] <= 57) break; // a leading zero: not JSON
    let whole = 0;
    const first = i;
    while (c >= 48 && c <= 57) {
      whole = whole * 10 + (c - 48);
      c = buf[++i];
    }
    if (i === first || i - first > 15) break;
    if (c === 46) {
      c = buf[++i];
      if (c < 48 || c > 57) break;
      while (c >= 48 && c <= 57) c = buf[++i];
    }
    if (c !== 44 || i >= end || !(whole + 1 < from || whole > to)) break;
    p = lineEnd(buf, i, end) + 1;
    skipped++;
  }
  cursor.pos = skipped;
  return p;
}

/**
 * `buf` as a DataView, to compare a line's fixed parts a word at a time. Made per parse call, never kept on a
 * parser: a long-lived parser holding its last buffer would keep a whole piece of an hour alive.
 */
function wordsOf(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Parses `gpu_util` lines into blocks; holds the node-name interning shared by every block. */
export class GpuUtilParser {
  private readonly nodes = new ByteSliceMap();
  private readonly nodeNames: string[] = [];
  /** laneByNode[nodeId][gpu] = lane id + 1 (0 = unknown). */
  private readonly laneByNode: Int32Array[] = [];
  readonly lanes: LaneTable;

  constructor(lanes: LaneTable) {
    this.lanes = lanes;
  }

  /** The node slice of the previous row of this chunk: consecutive rows usually share a node. */
  private prevNs = -1;
  private prevNe = -1;
  private prevNode = -1;

  /** Node id of the name bytes `buf[ns, ne)`, interned on first sight. */
  private nodeAt(buf: Uint8Array, ns: number, ne: number): number {
    const n = ne - ns;
    if (this.prevNs >= 0 && n === this.prevNe - this.prevNs) {
      const ps = this.prevNs;
      let k = 0;
      while (k < n && buf[ns + k] === buf[ps + k]) k++;
      if (k === n) return this.prevNode;
    }
    let nodeId = this.nodes.find(buf, ns, ne);
    if (nodeId < 0) {
      nodeId = this.nodeNames.length;
      this.nodeNames.push(utf8Slice(buf, ns, ne));
      this.nodes.add(buf, ns, ne, nodeId);
    }
    this.prevNs = ns;
    this.prevNe = ne;
    this.prevNode = nodeId;
    return nodeId;
  }

  /**
   * Reads `,"node":"…","gpu":N` at `i` into `place` (`cursor.pos` set past it) and returns the node's id, or
   * -1 when not in that simple shape. The previous row's node is tried first: a repeated name is scanned once.
   */
  private placeNode(buf: Uint8Array, w: DataView, i: number, end: number): number {
    // `,"node":"` read four bytes at a time (little-endian words)
    if (i + 9 > buf.length || w.getUint32(i, true) !== 0x6f6e222c || w.getUint32(i + 4, true) !== 0x3a226564 || buf[i + 8] !== 34) return -1;
    const ns = i + 9;
    const n = this.prevNe - this.prevNs;
    let ne = -1;
    let nodeId = -1;
    if (this.prevNs >= 0 && ns + n < end && buf[ns + n] === 34) {
      const ps = this.prevNs;
      let k = 0;
      while (k + 4 <= n && w.getUint32(ns + k, true) === w.getUint32(ps + k, true)) k += 4;
      while (k < n && buf[ns + k] === buf[ps + k]) k++;
      if (k === n) {
        ne = ns + n;
        nodeId = this.prevNode;
      }
    }
    if (nodeId < 0) {
      ne = scanPlainString(buf, ns, end);
      if (ne < 0) return -1;
    }
    // `,"gpu":` after the closing quote
    const g = ne + 1;
    if (g + 7 > buf.length || w.getUint32(g, true) !== 0x7067222c || w.getUint16(g + 4, true) !== 0x2275 || buf[g + 6] !== 58) return -1;
    const gpu = scanSmallInt(buf, ne + 8, end);
    if (gpu < 0) return -1;
    if (nodeId < 0) {
      const after = cursor.pos;
      nodeId = this.nodeAt(buf, ns, ne);
      cursor.pos = after;
    }
    place.gpu = gpu;
    return nodeId;
  }

  private laneId(nodeId: number, gpu: number): number {
    if (gpu >= 0 && gpu < 1024 && (gpu | 0) === gpu) {
      let arr = this.laneByNode[nodeId];
      if (arr === undefined) arr = this.laneByNode[nodeId] = new Int32Array(1024);
      const v = arr[gpu];
      if (v !== 0) return v - 1;
      const id = this.lanes.id(this.nodeNames[nodeId], gpu);
      arr[gpu] = id + 1;
      return id;
    }
    return this.lanes.id(this.nodeNames[nodeId], gpu);
  }

  /**
   * Parses the complete lines of `buf[start, end)` (`end` just past a `\n`) into `block`.
   * `firstLine` is the 1-based number of the first line. Returns the number of lines consumed.
   */
  parse(buf: Uint8Array, start: number, end: number, block: GpuUtilBlock, firstLine: number, bad: BadLine): number {
    const horizon = tsHorizon();
    let line = firstLine;
    this.prevNs = -1;
    const w = wordsOf(buf);
    for (let p = start; p < end; line++) {
      fast: {
        const ts = scanNumberAfter(buf, p, L_TS, end);
        if (ts !== ts) break fast;
        const nodeId = this.placeNode(buf, w, cursor.pos, end);
        if (nodeId < 0) break fast;
        const i = scanReadings(buf, cursor.pos, end);
        if (i < 0) break fast;
        const why = gpuRowProblem(ts, place.gpu, readings.util, horizon);
        if (why !== null) bad(line, why);
        else block.push(ts, this.laneId(nodeId, place.gpu), readings.util, readings.mem, readings.power);
        p = i;
        continue;
      }
      const nl = lineEnd(buf, p, end);
      this.slowLine(buf, p, nl, block, line, bad);
      p = nl + 1;
    }
    return line - firstLine;
  }

  private readonly views = new Map<string, { keys: Set<string>; flags: Uint8Array }>();

  /** Whether lane `id` is in the view (flags: 0 = not decided yet, 1 = in, 2 = out). */
  private viewOf(view: string): { keys: Set<string>; flags: Uint8Array } {
    let v = this.views.get(view);
    if (v === undefined) {
      v = { keys: new Set(view === '' ? [] : view.split('\n')), flags: new Uint8Array(256) };
      this.views.set(view, v);
    }
    return v;
  }

  private inView(v: { keys: Set<string>; flags: Uint8Array }, lane: number): boolean {
    if (lane >= v.flags.length) {
      const f = new Uint8Array(Math.max(lane + 1, v.flags.length * 2));
      f.set(v.flags);
      v.flags = f;
    }
    let flag = v.flags[lane];
    if (flag === 0) flag = v.flags[lane] = v.keys.has(this.lanes.key(lane)) ? 1 : 2;
    return flag === 1;
  }

  /**
   * Parses only the rows of the lanes named in `view` (`"<node>:<gpu>"` keys, newline-separated);
   * other rows are skipped after reading their node and gpu. Every line is walked (line numbers and
   * warnings for lines that are not JSON stay exact). With `bounds`, a line whose plain stamp lies
   * outside `[from, to]` is skipped after reading the stamp's whole part (it may be in no answer over the
   * bounds): the block then holds every row of the view inside the bounds, and not necessarily the others.
   */
  parseView(view: string, buf: Uint8Array, start: number, end: number, block: GpuUtilBlock, firstLine: number, bad: BadLine, bounds: TimeBounds = UNBOUNDED): number {
    const horizon = tsHorizon();
    const v = this.viewOf(view);
    const bounded = bounds.from > -Infinity || bounds.to < Infinity;
    const { from, to } = bounds;
    let line = firstLine;
    let retryAt = line;
    this.prevNs = -1;
    const w = wordsOf(buf);
    /** Where the previous row's stamp starts in `buf`, and its length (0: none yet). */
    let prevTs = 0;
    let prevTsLen = 0;
    for (let p = start; p < end; line++) {
      if (bounded && line >= retryAt) {
        p = linesOutside(buf, p, end, from, to);
        // a line inside the bounds: the next lines likely are too, look again a little later
        if (cursor.pos === 0) retryAt = line + RETRY_OUTSIDE_LINES;
        line += cursor.pos;
        if (p >= end) break;
      }
      fast: {
        let i = p;
        // `{"ts":` (little-endian words)
        if (i + 6 > buf.length || w.getUint32(i, true) !== 0x7374227b || w.getUint16(i + 4, true) !== 0x3a22) break fast;
        i += 6;
        const tsAt = i;
        // skip the stamp up to its comma; it is parsed (and checked) only for selected rows. A stamp equal to
        // the previous row's (the rows of one reading share it) is compared a word at a time instead
        let same = prevTsLen > 0 && tsAt + prevTsLen < end && buf[tsAt + prevTsLen] === 44;
        if (same) {
          let k = 0;
          while (k + 4 <= prevTsLen && w.getUint32(tsAt + k, true) === w.getUint32(prevTs + k, true)) k += 4;
          while (k < prevTsLen && buf[tsAt + k] === buf[prevTs + k]) k++;
          same = k === prevTsLen;
        }
        if (same) i = tsAt + prevTsLen;
        else {
          let c = buf[i];
          while (c !== 44 && c !== 10 && i < end) c = buf[++i];
          if (c !== 44) break fast;
          prevTs = tsAt;
          prevTsLen = i - tsAt;
        }
        const nodeId = this.placeNode(buf, w, i, end);
        if (nodeId < 0) break fast;
        const lane = this.laneId(nodeId, place.gpu);
        i = cursor.pos;
        if (!this.inView(v, lane)) {
          p = lineEnd(buf, i, end) + 1;
          continue;
        }
        const ts = scanNumber(buf, tsAt, end);
        if (ts !== ts || !matchBytes(buf, cursor.pos, L_NODE)) break fast;
        i = scanReadings(buf, i, end);
        if (i < 0) break fast;
        const why = gpuRowProblem(ts, place.gpu, readings.util, horizon);
        if (why !== null) bad(line, why);
        else block.push(ts, lane, readings.util, readings.mem, readings.power);
        p = i;
        continue;
      }
      const nl = lineEnd(buf, p, end);
      const before = block.length;
      this.slowLine(buf, p, nl, block, line, bad);
      if (block.length > before && !this.inView(v, block.lane[before])) block.length = before;
      p = nl + 1;
    }
    return line - firstLine;
  }

  private slowLine(buf: Uint8Array, s: number, e: number, block: GpuUtilBlock, line: number, bad: BadLine): void {
    const o = decodeLine(buf, s, e, line, bad, JSON.parse);
    if (o === UNDECODED) return;
    if (!hasExactKeys(o, GPU_KEYS)) {
      bad(line, `gpu_util record must have exactly the keys ${GPU_KEYS.join(', ')}`);
      return;
    }
    if (!isNum(o.ts) || typeof o.node !== 'string' || !isInt(o.gpu) || !isNum(o.util) || !isNum(o.mem_mb) || !isNum(o.power_w)) {
      bad(line, 'gpu_util record has a value of the wrong type');
      return;
    }
    const why = gpuRowProblem(o.ts, o.gpu, o.util, tsHorizon());
    if (why !== null) {
      bad(line, why);
      return;
    }
    block.push(o.ts, this.lanes.id(o.node, o.gpu), o.util, o.mem_mb, o.power_w);
  }
}
