import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ColumnBlock, GrowableColumn, type BlockColumns } from './columnBlock.ts';
import { GpuUtilBlock } from './gpuUtilBlock.ts';
import { PhaseBlock } from './phaseBlock.ts';
import { StringTable } from './interning.ts';

const SCHEMA = { ts: Float64Array, id: Uint16Array } as const;

/** The smallest block a stream could declare: two columns, rows appended one by one. */
class PairBlock extends ColumnBlock<typeof SCHEMA> {
  constructor(capacity = 16) {
    super(SCHEMA, 'k', 0, 3600, capacity);
  }
  get ts(): Float64Array {
    return this.live('ts');
  }
  get id(): Uint16Array {
    return this.live('id');
  }
  push(ts: number, id: number): void {
    if (this.length === this.cap) this.reserve(1);
    this.cols.ts[this.length] = ts;
    this.cols.id[this.length] = id;
    this.length++;
    this.noteTs(ts);
  }
  static from(c: BlockColumns<typeof SCHEMA>): PairBlock {
    const b = new PairBlock();
    b.adoptColumns(SCHEMA, c);
    return b;
  }
}

describe('the column base', () => {
  test('makes room for an expected row count at once, and hands over views without a trimmed copy when asked', () => {
    const b = new PairBlock(16);
    b.push(1, 1);
    b.expectRows(5000);
    const before = b.columns(false).cols.ts.buffer;
    assert.equal(before.byteLength, 5000 * 8, 'room for the expected rows in one step');
    for (let i = 1; i < 4000; i++) b.push(1 + i, i % 7);
    const views = b.columns(false);
    assert.equal(views.cols.ts.buffer, before, 'no copy was made on the way');
    assert.equal(views.length, 4000);
    assert.equal(views.cols.ts.length, 4000);
    assert.deepEqual(Array.from(views.cols.ts.subarray(0, 3)), [1, 2, 3]);
    b.expectRows(10);
    assert.equal(b.columns(false).cols.ts.buffer, before, 'never shrinks');
    assert.notEqual(b.columns().cols.ts.buffer, before, 'a trimmed hand-over copies');
  });

  test('grows past its capacity keeping every row, trims, and hands its columns over intact', () => {
    const b = new PairBlock(16);
    for (let i = 0; i < 1000; i++) b.push(1000 - i, i % 7);
    assert.equal(b.length, 1000);
    assert.equal(b.ts.length, 1000);
    assert.deepEqual([b.ts[0], b.ts[999], b.id[6], b.id[7]], [1000, 1, 6, 0]);
    assert.deepEqual([b.tsMin, b.tsMax], [1, 1000]);
    assert.ok(b.bytesResident() >= 1000 * 10);
    b.trim();
    assert.ok(b.bytesResident() <= (1000 + 16) * 10);
    const moved = structuredClone(b.columns(), { transfer: ColumnBlock.transferables(b.columns()) });
    const again = PairBlock.from(moved);
    assert.deepEqual(Array.from(again.ts), Array.from({ length: 1000 }, (_, i) => 1000 - i));
    // an adopted block keeps growing
    again.push(0.5, 3);
    assert.equal(again.length, 1001);
    assert.equal(again.tsMin, 0.5);
  });

  test('live views follow appended rows (a view taken before a push is not reused after)', () => {
    const b = new PairBlock(16);
    b.push(1, 1);
    const before = b.ts;
    b.push(2, 2);
    assert.equal(before.length, 1);
    assert.equal(b.ts.length, 2);
  });

  test('a gpu_util block widens to the Float64 schema for a value the compact one cannot hold, altering nothing', () => {
    const b = new GpuUtilBlock('k', 0, 3600, 16);
    b.push(1, 0, 50, 1000, 300);
    assert.equal(b.wide, false);
    b.push(2, 1, 50.5, 2 ** 21, 5000);
    assert.equal(b.wide, true);
    assert.deepEqual([b.util[0], b.memMb(0), b.powerW(0), b.util[1], b.memMb(1), b.powerW(1)], [50, 1000, 300, 50.5, 2 ** 21, 5000]);
    const moved = GpuUtilBlock.adopt('k', 0, 3600, b.columns(), [7, 8]);
    assert.deepEqual(Array.from(moved.lane), [7, 8]);
    assert.equal(moved.memMb(1), 2 ** 21);
  });

  test('a phase block keeps each row\'s GPU list beside its rows', () => {
    const strings = new StringTable();
    const b = new PhaseBlock('k', 0, 3600, strings, 16);
    for (let i = 0; i < 40; i++) {
      b.begin(strings.id('train'), i, i + 1, strings.id('n'), i, strings.id('train'));
      for (let g = 0; g < i % 3; g++) b.pushGpu(g);
      b.commit();
    }
    assert.deepEqual(b.event(2).gpus, [0, 1]);
    assert.deepEqual(b.event(3).gpus, []);
    assert.equal(b.gpuStart.length, 41);
    const adopted = PhaseBlock.adopt('k', 0, 3600, strings, b.columns(), [0, 1, 2]);
    assert.deepEqual(adopted.event(38), b.event(38));
  });

  test('a growable column doubles and trims', () => {
    const c = new GrowableColumn<Int32Array>(Int32Array as unknown as new (n: number) => Int32Array);
    for (let i = 0; i < 100; i++) c.push(i);
    assert.equal(c.values[99], 99);
    c.trim();
    assert.ok(c.values.length <= 116);
  });
});
