// Property tests for every decoder and for query parameters: whatever the bytes or the arguments, the answer
// is a value or the decoder's own typed error (never a crash, a hang or another exception); over HTTP never a 5xx.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { readCompleteLines } from '../src/formats/jsonlTail.ts';
import { ParquetError, ParquetFile } from '../src/formats/parquet.ts';
import { parsePromText, PromParseError } from '../src/formats/prometheus/text.ts';
import { PickleError, TorchFormatError } from '../src/formats/torch/errors.ts';
import { openTorchFile } from '../src/formats/torch/load.ts';
import { unpickle } from '../src/formats/torch/unpickle.ts';
import { ZipArchive, ZipError } from '../src/formats/zip.ts';
import { decodeLine, type BadLine } from '../src/formats/columns/lineScan.ts';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';
import { copyFixtureRun, fixturePath, type RunCopy } from './support/fixtures.ts';

/** Runs per property: enough to find the easy breaks on every CI run, small enough for its time budget. */
const RUNS = Number(process.env.RLSIGHT_FUZZ_RUNS ?? 150);
const dir = mkdtempSync(join(tmpdir(), 'rlsight-fuzz-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const ROLLOUT_PT = readFileSync(fixturePath('miles-demo', 'run', 'rollout_data', '1.pt'));
const TRAIN_PT = readFileSync(fixturePath('miles-demo', 'run', 'train_data', '1_0.pt'));
const PARQUET = readFileSync(fixturePath('miles-demo', 'run', 'dashboard_columns', 'rollout_1.parquet'));

/** A copy of `base` with some bytes overwritten, a cut, or both. */
const mutated = (base: Uint8Array) =>
  fc
    .record({
      edits: fc.array(fc.tuple(fc.nat({ max: base.length - 1 }), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      cut: fc.option(fc.nat({ max: base.length }), { nil: undefined }),
    })
    .map(({ edits, cut }) => {
      const b = Uint8Array.from(base);
      for (const [at, v] of edits) b[at] = v;
      return cut === undefined ? b : b.subarray(0, cut);
    });

let n = 0;
function file(bytes: Uint8Array, ext: string): string {
  const p = join(dir, `f${n++}${ext}`);
  writeFileSync(p, bytes);
  return p;
}

const isTyped = (e: unknown, ...kinds: (new (...a: any[]) => Error)[]): boolean => kinds.some((k) => e instanceof k);

describe('decoders never fail with anything but their own error', () => {
  test('pickle: random bytes and mutated rollout pickles', () => {
    const pkl = (() => {
      // The data.pkl of a real rollout dump, read through the archive.
      const start = ROLLOUT_PT.indexOf(Buffer.from('data.pkl')) + 'data.pkl'.length;
      return ROLLOUT_PT.subarray(start, Math.min(ROLLOUT_PT.length, start + 6000));
    })();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 400 }), mutated(pkl)), (bytes) => {
        try {
          unpickle(Uint8Array.from([0x80, 2, ...bytes]), { file: 'x.pkl', typedLists: bytes.length % 2 === 0 });
        } catch (e) {
          assert.ok(isTyped(e, PickleError), String(e));
        }
      }),
      { numRuns: RUNS * 4 },
    );
  });

  test('torch archives: mutated rollout and train dumps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutated(ROLLOUT_PT), mutated(TRAIN_PT)), async (bytes) => {
        try {
          const f = await openTorchFile(file(bytes, '.pt'));
          for (const s of f.storages.values()) await s.bytes();
          await f.close();
        } catch (e) {
          assert.ok(isTyped(e, ZipError, PickleError, TorchFormatError), String(e));
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('zip: random bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => {
        try {
          const z = await ZipArchive.open(file(bytes, '.zip'));
          for (const e of z.entries) await z.read(e).catch((err) => assert.ok(isTyped(err, ZipError), String(err)));
        } catch (e) {
          assert.ok(isTyped(e, ZipError), String(e));
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('parquet: mutated token mirrors', async () => {
    // Edits land in the footer (metadata, schema, row-group index) or cut the file. Damaged column pages make
    // hyparquet leave sibling reads rejected and unobserved, which the test runner counts as failures; the
    // server logs those (listen.ts) and the damage matrix covers flipped pages end to end.
    const footer = PARQUET.length - 400;
    const tailMutated = fc
      .record({ edits: fc.array(fc.tuple(fc.integer({ min: footer, max: PARQUET.length - 1 }), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }), cut: fc.option(fc.nat({ max: PARQUET.length }), { nil: undefined }) })
      .map(({ edits, cut }) => {
        const b = Uint8Array.from(PARQUET);
        for (const [at, v] of edits) b[at] = v;
        return cut === undefined ? b : b.subarray(0, cut);
      });
    await fc.assert(
      fc.asyncProperty(tailMutated, async (bytes) => {
        let f: ParquetFile | undefined;
        try {
          f = await ParquetFile.open(file(bytes, '.parquet'), 'm.parquet');
          await f.readRows(0, f.numRows);
        } catch (e) {
          assert.ok(isTyped(e, ParquetError), String(e));
        } finally {
          await f?.close();
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('Prometheus text: random and mutated expositions', () => {
    const real = '# HELP sglang_num_running_reqs Running.\n# TYPE sglang_num_running_reqs gauge\nsglang_num_running_reqs{model_name="m",dp_rank="0"} 3.0\nsglang_token_usage{model_name="m"} 0.25 1700000000000\n';
    const bytes = fc.oneof(fc.string({ maxLength: 200 }), mutated(Buffer.from(real)).map((b) => Buffer.from(b).toString('latin1')), fc.constantFrom('a{b="\\', 'x 1e309', '{} 1', 'm{a="1",a="2"} NaN', '# TYPE'));
    fc.assert(
      fc.property(bytes, (text) => {
        try {
          const out = parsePromText(text);
          for (const s of out.samples) assert.equal(typeof s.value, 'number');
        } catch (e) {
          assert.ok(isTyped(e, PromParseError), String(e));
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  test('JSONL: complete lines only, every line decoded or reported', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.json(), fc.string(), fc.constant('null'), fc.constant('{')), { maxLength: 30 }), fc.boolean(), (lines, torn) => {
        const text = lines.length === 0 ? '' : lines.join('\n') + (torn ? '' : '\n');
        const p = file(Buffer.from(text), '.jsonl');
        let seen = 0;
        const bad: BadLine = () => void seen++;
        let decoded = 0;
        readCompleteLines(p, 0, (chunk) => {
          let at = 0;
          while (at < chunk.end) {
            const nl = chunk.buf.indexOf(10, at);
            decodeLine(chunk.buf, at, nl, decoded + 1, bad, JSON.parse);
            decoded++;
            at = nl + 1;
          }
        });
        assert.equal(decoded, torn ? Math.max(0, lines.length - 1) : lines.length);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('query parameters never give a 5xx', () => {
  let run: RunCopy;
  let app: ReturnType<typeof createApp>;
  before(async () => {
    run = copyFixtureRun();
    app = createApp({ run: await openRun(run.dir) });
  });
  after(() => run.dispose());

  const PATHS = [
    '/api/metrics',
    '/api/advisory',
    '/api/rlsight/advisory',
    '/api/timeline/phases',
    '/api/timeline/gpu',
    '/api/timeline/heatmap',
    '/api/timeline/fleet',
    '/api/timeline/outliers',
    '/api/timeline/engine_series',
    '/api/rlsight/lanes',
    '/api/rollout/1/summary',
    '/api/rollout/1/trajectories',
    '/api/rollout/1/sample/32/tokens',
    '/api/rollout/1/sample/32/messages',
  ];
  const NAMES = ['t0', 't1', 'keys', 'x', 'lanes', 'metric', 'x_buckets', 'max_points', 'criterion', 'top_k', 'per_dp_rank', 'eval', 'start', 'end', 'sample_index'];
  const VALUE = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.double().map(String),
    fc.integer().map(String),
    fc.constantFrom('', 'NaN', 'inf', '-1', '1e309', '99999999999999999999', 'g:0-7', 'rank:0-3,every:2', 'util', 'dump/reward_mean', 'true', 'maybe', '%00', '..'),
  );

  test('random parameters on every endpoint', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), fc.array(fc.tuple(fc.constantFrom(...NAMES), VALUE), { maxLength: 5 }), async (path, params) => {
        const q = new URLSearchParams(params).toString();
        const res = await app.request(`${path}${q ? `?${q}` : ''}`, { headers: { host: '127.0.0.1' } });
        await res.arrayBuffer();
        assert.ok(res.status < 500, `${res.status} ${path}?${q}`);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  test('random path segments', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('api', 'rollout', 'sample', 'tokens', '-1', '1e3', '..', '%2e%2e', '99999999999999999999')), { maxLength: 6 }), async (segs) => {
        const res = await app.request(`/${segs.map(encodeURIComponent).join('/')}`, { headers: { host: '127.0.0.1' } });
        await res.arrayBuffer();
        assert.ok(res.status < 500, `${res.status} /${segs.join('/')}`);
      }),
      { numRuns: RUNS },
    );
  });
});
