// The byte scanners must give exactly what JSON.parse gives, whatever the line looks like.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineSeriesBlock, EngineSeriesParser } from './engineSeriesBlock.ts';
import { GpuUtilBlock, GpuUtilParser } from './gpuUtilBlock.ts';
import { EngineSeriesTable, LaneTable, StringTable } from './interning.ts';
import { cursor, parsePythonJson, scanNumber } from './lineScan.ts';
import { PhaseBlock, PhaseParser } from './phaseBlock.ts';
import { collectGarbage } from '../../../test/support/collectGarbage.ts';

/** `buf` parsed whole and through the lane view `view` by one parser: both blocks, their bad lines, the lines walked. */
function wholeAndView(buf: Uint8Array, view: string) {
  const lanes = new LaneTable();
  const parser = new GpuUtilParser(lanes);
  const whole = new GpuUtilBlock('k', 0, 1);
  const badWhole: number[] = [];
  parser.parse(buf, 0, buf.length, whole, 1, (l) => badWhole.push(l));
  const viewBlock = new GpuUtilBlock('k', 0, 1);
  const badView: number[] = [];
  const walked = parser.parseView(view, buf, 0, buf.length, viewBlock, 1, (l) => badView.push(l));
  return { lanes, whole, badWhole, view: viewBlock, badView, walked };
}

/** How Python's json.dumps prints a float (repr): `.0` on integral values, 2-digit exponents. */
function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  const s = String(x);
  return s.replace(/e([+-])(\d)$/, 'e$10$2').replace('e+', 'e+');
}

const anyFloat = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: 0, max: 2_000_000_000 }).map((x) => x + 0.5),
  fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }).map((x) => x / 1000),
  fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }),
  fc.double({ min: 1e9, max: 2e9, noNaN: true }),
  fc.double({ min: 1, max: 1e7, noNaN: true }),
  fc.double({ min: 1e15, max: 1e17, noNaN: true }),
);
/** Timestamps in the readers' domain (epoch seconds, not negative, not far in the future); others are dropped rows. */
const stampFloat = anyFloat.filter((x) => x >= 0 && x <= 1.7e9);
const text = fc.oneof(fc.constantFrom('10.0.0.1', '10.0.0.10', 'héllo', 'a"b', 'back\\slash', ''), fc.string({ maxLength: 8 }));

test('scanNumber agrees with JSON.parse on every number text', () => {
  fc.assert(
    fc.property(anyFloat, fc.boolean(), (x, py) => {
      const s = py ? pyFloat(x) : String(x);
      const buf = Buffer.from(s + ',');
      const v = scanNumber(buf, 0, buf.length);
      assert.ok(Object.is(v, JSON.parse(s)), `${s}: ${v}`);
      assert.equal(cursor.pos, s.length);
    }),
    { numRuns: 20000 },
  );
  for (const bad of ['01', '-', '1.', '.5', '1e', '+1', 'x']) assert.ok(Number.isNaN(scanNumber(Buffer.from(bad + ','), 0, bad.length + 1)), bad);
});

test('Python NaN and Infinity are read as numbers', () => {
  assert.deepEqual(parsePythonJson('{"a":NaN,"b":-Infinity,"c":"NaN","d":[Infinity]}'), { a: NaN, b: -Infinity, c: 'NaN', d: [Infinity] });
  assert.throws(() => parsePythonJson('{"a":nan}'));
});

test('gpu_util: the fast path and JSON.parse give the same rows', () => {
  const sample = fc.record({
    ts: stampFloat,
    node: text,
    gpu: fc.integer({ min: 0, max: 1023 }),
    util: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.double({ min: 0, max: 100, noNaN: true })),
    mem_mb: fc.oneof(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 0, max: 5_000_000 })),
    power_w: fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 70_000 })),
  });
  fc.assert(
    fc.property(fc.array(fc.tuple(sample, fc.boolean()), { minLength: 1, maxLength: 30 }), (rows) => {
      const lines = rows.map(([r, py]) =>
        py ? `{"ts":${pyFloat(r.ts)},"node":${JSON.stringify(r.node)},"gpu":${r.gpu},"util":${r.util},"mem_mb":${r.mem_mb},"power_w":${r.power_w}}` : JSON.stringify(r),
      );
      const buf = Buffer.from(lines.join('\n') + '\n');
      const lanes = new LaneTable();
      const block = new GpuUtilBlock('k', 0, 1, 4);
      const bad: string[] = [];
      new GpuUtilParser(lanes).parse(buf, 0, buf.length, block, 1, (l, m) => bad.push(`${l}: ${m}`));
      assert.deepEqual(bad, []);
      assert.equal(block.length, rows.length);
      rows.forEach(([r], i) => {
        const want = JSON.parse(lines[i]);
        assert.ok(Object.is(block.ts[i], want.ts));
        assert.equal(lanes.node(block.lane[i]), want.node);
        assert.equal(lanes.gpu(block.lane[i]), want.gpu);
        assert.equal(block.util[i], want.util);
        assert.equal(block.memMb(i), want.mem_mb);
        assert.equal(block.powerW(i), want.power_w);
        void r;
      });
    }),
    { numRuns: 300 },
  );
});

test('gpu_util: a lane view holds exactly the selected lanes\' rows of a whole parse', () => {
  const row = fc.record({ ts: stampFloat, node: fc.constantFrom('10.0.0.1', '10.0.0.2', 'x"y'), gpu: fc.integer({ min: 0, max: 3 }), util: fc.integer({ min: 0, max: 100 }) });
  fc.assert(
    fc.property(fc.array(fc.tuple(row, fc.integer({ min: 0, max: 9 })), { maxLength: 40 }), fc.subarray(['10.0.0.1:0', '10.0.0.1:3', '10.0.0.2:1', 'x"y:2', 'nope:0']), (rows, sel) => {
      const lines = rows.map(([r, style]) =>
        style === 0 ? 'not json' : style === 1 ? JSON.stringify({ ...r, mem_mb: 5, power_w: 6 }, null, 1).replace(/\n/g, '') : `{"ts":${pyFloat(r.ts)},"node":${JSON.stringify(r.node)},"gpu":${r.gpu},"util":${r.util},"mem_mb":5,"power_w":6}`,
      );
      const buf = Buffer.from(lines.map((l) => l + '\n').join(''));
      const { lanes, whole, badWhole, view, badView, walked } = wholeAndView(buf, [...sel].sort().join('\n'));
      assert.equal(walked, lines.length);
      assert.deepEqual(badView, badWhole);
      const pick = (b: GpuUtilBlock): string[] => {
        const out: string[] = [];
        for (let i = 0; i < b.length; i++) if (sel.includes(lanes.key(b.lane[i]))) out.push(`${b.ts[i]} ${lanes.key(b.lane[i])} ${b.util[i]}`);
        return out;
      };
      assert.deepEqual(pick(view), pick(whole));
      for (let i = 0; i < view.length; i++) assert.ok(sel.includes(lanes.key(view.lane[i])));
    }),
    { numRuns: 300 },
  );
});

test('gpu_util: a lane view over bounds keeps every selected row stamped within them, whatever the rows\' order', () => {
  // stamps around the bounds in every form a writer may print: repr, exponent, many digits, integers
  const stamp = fc.oneof(fc.integer({ min: 900_000, max: 2_100_000 }).map((x) => x / 1000), fc.integer({ min: 900, max: 2100 }), fc.double({ min: 900, max: 2100, noNaN: true }));
  const form = (x: number, style: number): string => (style === 0 ? pyFloat(x) : style === 1 ? x.toExponential() : style === 2 ? x.toFixed(12) : String(x));
  const bound = fc.oneof(fc.constant(NaN), fc.integer({ min: 900, max: 2100 }), fc.double({ min: 900, max: 2100, noNaN: true }));
  const row = fc.record({ ts: stamp, style: fc.integer({ min: 0, max: 3 }), node: fc.constantFrom('10.0.0.1', '10.0.0.2'), gpu: fc.integer({ min: 0, max: 1 }), bad: fc.integer({ min: 0, max: 19 }) });
  fc.assert(
    fc.property(fc.array(row, { maxLength: 60 }), bound, bound, (rows, a, b) => {
      const from = Number.isNaN(a) ? -Infinity : Math.min(a, Number.isNaN(b) ? a : b);
      const to = Number.isNaN(b) ? Infinity : Math.max(b, Number.isNaN(a) ? b : a);
      const lines = rows.map((r) => (r.bad === 0 ? 'not json' : `{"ts":${form(r.ts, r.style)},"node":"${r.node}","gpu":${r.gpu},"util":${r.bad === 1 ? '"x"' : 7},"mem_mb":5,"power_w":6}`));
      const buf = Buffer.from(lines.map((l) => l + '\n').join(''));
      const lanes = new LaneTable();
      const parser = new GpuUtilParser(lanes);
      const sel = '10.0.0.2:1';
      const full = new GpuUtilBlock('k', 0, 1);
      const badFull: number[] = [];
      parser.parseView(sel, buf, 0, buf.length, full, 1, (l) => badFull.push(l));
      const bounded = new GpuUtilBlock('k', 0, 1);
      const badBounded: number[] = [];
      const walked = parser.parseView(sel, buf, 0, buf.length, bounded, 1, (l) => badBounded.push(l), { from, to });
      assert.equal(walked, lines.length, 'every line is counted, skipped or not');
      const inside = (blk: GpuUtilBlock): string[] => {
        const out: string[] = [];
        for (let i = 0; i < blk.length; i++) if (blk.ts[i] >= from && blk.ts[i] <= to) out.push(`${blk.ts[i]} ${lanes.key(blk.lane[i])}`);
        return out;
      };
      assert.deepEqual(inside(bounded), inside(full));
      // a skipped line is one whose stamp lies outside the bounds: the bad lines reported keep their numbers
      for (const l of badBounded) assert.ok(badFull.includes(l), `line ${l}`);
      for (const l of badFull) if (!badBounded.includes(l)) assert.ok(lines[l - 1] !== 'not json' && !(JSON.parse(lines[l - 1].replace('"x"', '0')).ts >= from && JSON.parse(lines[l - 1].replace('"x"', '0')).ts <= to), `line ${l}`);
    }),
    { numRuns: 500 },
  );
});

test('gpu_util: a bounded lane view reads past the plain stamps outside its bounds, not the others', () => {
  const line = (ts: string): string => `{"ts":${ts},"node":"10.0.0.1","gpu":0,"util":1,"mem_mb":5,"power_w":6}\n`;
  // out of time order: a stamp inside the bounds among the ones before them; the stamps a read cannot place by their whole part are kept
  const stamps = ['1000.5', '1001.0', '1500.25', '1002.0', '998', '1.5e3', '1002.5', '01000.0', '2001.0', '1499.0'];
  const buf = Buffer.from(stamps.map(line).join(''));
  const block = new GpuUtilBlock('k', 0, 1);
  const bad: number[] = [];
  const walked = new GpuUtilParser(new LaneTable()).parseView('10.0.0.1:0', buf, 0, buf.length, block, 1, (l) => bad.push(l), { from: 1499.5, to: 2000.5 });
  assert.equal(walked, stamps.length);
  // `1499.0` stays (its whole part is within one of `from`); `01000.0` is a bad line, reported at its number as by a whole read
  assert.deepEqual([...block.ts], [1500.25, 1500, 1499]);
  assert.deepEqual(bad, [8]);
});

test('gpu_util: a line cut anywhere at the end of the bytes is read as a whole read of them reads it (word compares stay inside)', () => {
  const full = '{"ts":1000.5,"node":"10.0.0.1","gpu":3,"util":7,"mem_mb":5,"power_w":6}';
  const head = '{"ts":1000.0,"node":"10.0.0.1","gpu":2,"util":1,"mem_mb":5,"power_w":6}\n';
  for (let cut = 1; cut <= full.length; cut++) {
    // the bytes end where the line is cut: nothing past them to read a word from
    const buf = new Uint8Array(Buffer.from(head + full.slice(0, cut) + '\n'));
    const outcome = (view: boolean): string => {
      const lanes = new LaneTable();
      const block = new GpuUtilBlock('k', 0, 1);
      const bad: number[] = [];
      const parser = new GpuUtilParser(lanes);
      if (view) parser.parseView('10.0.0.1:2\n10.0.0.1:3', buf, 0, buf.length, block, 1, (l) => bad.push(l));
      else parser.parse(buf, 0, buf.length, block, 1, (l) => bad.push(l));
      return `${Array.from({ length: block.length }, (_, i) => `${block.ts[i]} ${lanes.key(block.lane[i])}`).join(',')} bad ${bad.join(',')}`;
    };
    const want = cut === full.length ? '1000 10.0.0.1:2,1000.5 10.0.0.1:3 bad ' : '1000 10.0.0.1:2 bad 2';
    assert.equal(outcome(false), want, `cut at ${cut}`);
    assert.equal(outcome(true), want, `cut at ${cut} (view)`);
  }
});

test('gpu_util: rows sharing a stamp, or nearly (one a prefix of the next), are read by a lane view as by a whole parse', () => {
  const stamp = fc.constantFrom('1000.5', '1000.55', '1000.5e1', '1000', '1000.5,', '10', '1000.25', '1000.5 ');
  const row = fc.record({ ts: stamp, node: fc.constantFrom('10.0.0.1', '10.0.0.2'), gpu: fc.integer({ min: 0, max: 1 }) });
  fc.assert(
    fc.property(fc.array(row, { maxLength: 40 }), (rows) => {
      const buf = Buffer.from(rows.map((r) => `{"ts":${r.ts},"node":"${r.node}","gpu":${r.gpu},"util":3,"mem_mb":5,"power_w":6}\n`).join(''));
      const { lanes, whole, badWhole, view, badView } = wholeAndView(buf, '10.0.0.1:1\n10.0.0.2:0');
      const pick = (b: GpuUtilBlock): string[] =>
        Array.from({ length: b.length }, (_, i) => `${b.ts[i]} ${lanes.key(b.lane[i])}`).filter((r) => r.endsWith(' 10.0.0.1:1') || r.endsWith(' 10.0.0.2:0'));
      assert.deepEqual(pick(view), pick(whole));
      assert.deepEqual(badView, badWhole);
    }),
    { numRuns: 500 },
  );
});

test('gpu_util: a typical block stays within 16 bytes a row', () => {
  const block = new GpuUtilBlock('k', 0, 1, 16);
  const lines: string[] = [];
  for (let i = 0; i < 10_000; i++) lines.push(`{"ts":${1755800000 + i}.5,"node":"10.0.${i % 7}.1","gpu":${i % 8},"util":${i % 101},"mem_mb":${80000 + i},"power_w":${700 - (i % 300)}}`);
  const buf = Buffer.from(lines.join('\n') + '\n');
  new GpuUtilParser(new LaneTable()).parse(buf, 0, buf.length, block, 1, () => assert.fail('bad line'));
  block.trim();
  assert.equal(block.wide, false);
  assert.ok(block.bytesResident() / block.length <= 16, `${block.bytesResident() / block.length} B/row`);
  const { offsets, rows } = block.laneRows();
  assert.equal(rows.length, 10_000);
  for (let l = 0; l + 1 < offsets.length; l++) for (let k = offsets[l]; k < offsets[l + 1]; k++) assert.equal(block.lane[rows[k]], l);
});

test('engine_series: the fast path and JSON.parse give the same rows and series identities', () => {
  const labels = fc.oneof(
    fc.constant({}),
    fc.record({ engine_type: fc.constantFrom('unified', 'prefill'), dp_rank: fc.constantFrom('0', '1', '7') }),
    fc.dictionary(fc.string({ maxLength: 4 }), fc.oneof(text, fc.constant(null)), { maxKeys: 2 }),
  );
  const sample = fc.record({
    ts: stampFloat,
    addr: fc.constantFrom('http://10.0.0.1:15000', 'http://10.0.0.2:15004', 'x{y}'),
    metric: fc.constantFrom('sglang_num_running_reqs', 'sglang_generation_tokens_total', 'm"q'),
    labels,
    value: anyFloat,
  });
  fc.assert(
    fc.property(fc.array(fc.tuple(sample, fc.boolean()), { minLength: 1, maxLength: 30 }), (rows) => {
      const lines = rows.map(([r, py]) =>
        py
          ? `{"ts":${pyFloat(r.ts)},"addr":${JSON.stringify(r.addr)},"metric":${JSON.stringify(r.metric)},"labels":${JSON.stringify(r.labels)},"value":${pyFloat(r.value)}}`
          : JSON.stringify(r),
      );
      const buf = Buffer.from(lines.join('\n') + '\n');
      const table = new EngineSeriesTable();
      const block = new EngineSeriesBlock('k', 0, 1, 4);
      const bad: string[] = [];
      new EngineSeriesParser(table).parse(buf, 0, buf.length, block, 1, (l, m) => bad.push(`${l}: ${m}`));
      assert.deepEqual(bad, []);
      assert.equal(block.length, rows.length);
      lines.forEach((line, i) => {
        const want = JSON.parse(line);
        const key = table.key(block.series[i]);
        assert.ok(Object.is(block.ts[i], want.ts));
        assert.ok(Object.is(block.value[i], want.value));
        assert.equal(key.addr, want.addr);
        assert.equal(key.metric, want.metric);
        const kept = Object.fromEntries(Object.entries(want.labels).filter(([, v]) => v !== null));
        assert.equal(key.labelsJson, JSON.stringify(kept));
      });
    }),
    { numRuns: 300 },
  );
});

test('phases: the fast path and JSON.parse give the same events', () => {
  const ev = fc.record({
    name: fc.constantFrom('actor_train', 'rollout', 'x"y', 'é'),
    t0: stampFloat,
    t1: fc.oneof(stampFloat, fc.constant(-1)),
    node: text,
    gpus: fc.array(fc.integer({ min: 0, max: 15 }), { maxLength: 4 }),
    rank: fc.integer({ min: -1, max: 4000 }),
    role: fc.constantFrom('train', 'rollout_manager'),
  }).map((e) => (e.t1 === -1 ? e : { ...e, t1: Math.max(e.t0, e.t1) }));
  fc.assert(
    fc.property(fc.array(fc.tuple(ev, fc.boolean()), { minLength: 1, maxLength: 20 }), (rows) => {
      const lines = rows.map(([r, py]) =>
        py
          ? `{"name":${JSON.stringify(r.name)},"t0":${pyFloat(r.t0)},"t1":${pyFloat(r.t1)},"node":${JSON.stringify(r.node)},"gpus":${JSON.stringify(r.gpus)},"rank":${r.rank},"role":"${r.role}"}`
          : JSON.stringify(r),
      );
      const buf = Buffer.from(lines.join('\n') + '\n');
      const block = new PhaseBlock('k', 0, 1, new StringTable(), 2);
      const strings = new StringTable();
      const b2 = new PhaseBlock('k', 0, 1, strings, 2);
      new PhaseParser(strings).parse(buf, 0, buf.length, b2, 1, () => assert.fail('bad line'));
      void block;
      assert.equal(b2.length, rows.length);
      lines.forEach((line, i) => assert.deepEqual(b2.event(i), JSON.parse(line)));
      assert.equal(b2.openCount, rows.filter(([r]) => r.t1 === -1).length);
    }),
    { numRuns: 300 },
  );
});

test('a gpu_util value of -0 is kept as -0 (the compact unsigned columns would store 0)', () => {
  const b = new GpuUtilBlock('x', 0, 3600);
  b.push(1, 0, 5, 10, 20);
  b.push(2, 0, -0, 10, 20);
  assert.equal(b.wide, true);
  assert.ok(Object.is(b.util[1], -0));
  assert.equal(b.util[0], 5);
});

test('a gpu_util parser keeps no hold on the bytes it parsed: a long-lived parser would keep a piece of an hour alive', async () => {
  const parser = new GpuUtilParser(new LaneTable());
  const parsed = (): WeakRef<ArrayBufferLike> => {
    const text = Array.from({ length: 50 }, (_, i) => `{"ts":${1000 + i},"node":"10.0.0.${i % 3}","gpu":${i % 8},"util":50,"mem_mb":1,"power_w":2}`).join('\n') + '\n';
    // bytes of their own (not a slice of Buffer's shared pool), so they can be collected
    const buf = new TextEncoder().encode(text);
    parser.parse(buf, 0, buf.length, new GpuUtilBlock('k', 0, 1, 4), 1, () => {});
    parser.parseView('10.0.0.1:1', buf, 0, buf.length, new GpuUtilBlock('k', 0, 1, 4), 1, () => {});
    return new WeakRef(buf.buffer);
  };
  const ref = parsed();
  for (let i = 0; i < 3 && ref.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    collectGarbage();
  }
  assert.equal(ref.deref(), undefined, 'the parsed bytes were collected while the parser lives on');
  assert.ok(parser.lanes.size > 0, 'the parser is still in use');
});
