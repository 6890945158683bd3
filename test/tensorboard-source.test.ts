// A trainer's TensorBoard logdir as a metric source: event files written by the real writers
// (torch.utils.tensorboard, tensorboardX) read as TensorBoard's own EventAccumulator reads them (golden.json),
// a file still being written read to its last whole record, a damaged record refused by its checksum,
// several runs in one logdir, the tensor form of a scalar, the scalars beside a slime dump (a run with no
// telemetry of its own), a scalar named like one of the run's own keys kept apart, names fixed when first
// given, and `collect --tensorboard` recording them once.
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { startCollectorService } from '../src/collect/service.ts';
import { TensorBoardTail } from '../src/collect/tensorboardTail.ts';
import { parseCollectFlags } from '../src/commands/collect.ts';
import { openRun } from '../src/commands/openRun.ts';
import { decodeScalarEvent, encodeEventFile, readTfRecord, tfRecord } from '../src/formats/tfevents.ts';
import { createApp } from '../src/server/app.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { copyFixtureRun, fixturePath, readFixtureJson } from './support/fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-tb-'));
const started: ChildProcess[] = [];
after(() => {
  for (const c of started) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(root, { recursive: true, force: true });
});
let n = 0;
const fresh = (): string => {
  const d = join(root, `d${n++}`);
  mkdirSync(d, { recursive: true });
  return d;
};

type Golden = Record<string, Record<string, [number, number | null, number][]>>;
const WRITERS = ['tb-torch', 'tb-tensorboardx'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function served(runDir: string, logdir: string): Promise<{ metrics: (keys: string[], x?: string) => Promise<any>; meta: () => Promise<any>; advance: () => Promise<void> }> {
  const run = await openRun(runDir, { tensorboard: logdir });
  const app = createApp({ run });
  const get = async (p: string) => {
    const r = await app.request(p, { headers: { host: '127.0.0.1' } });
    assert.equal(r.status, 200, await r.clone().text());
    return r.json();
  };
  return {
    metrics: (keys, x = 'tensorboard/step') => get(`/api/metrics?keys=${encodeURIComponent(keys.join(','))}&x=${x}`),
    meta: () => get('/api/meta'),
    advance: () => run.model.advance(),
  };
}

function eventFile(writer: string): string {
  const dir = fixturePath(writer, 'logdir', 'slime_run');
  return join(dir, readdirSync(dir)[0]);
}

// Event protobufs written by hand, for what the fixtures' writers do not write.
const varint = (x: number | bigint): number[] => {
  const v = BigInt(x);
  return v < 0x80n ? [Number(v)] : [Number(v & 0x7fn) | 0x80, ...varint(v >> 7n)];
};
const field = (no: number, bytes: number[]): number[] => [...varint((no << 3) | 2), ...varint(bytes.length), ...bytes];
const str = (s: string): number[] => [...Buffer.from(s)];
const f64 = (x: number): number[] => [...Buffer.from(new Float64Array([x]).buffer)];
const simpleEvent = (step: number | bigint, wallTime: number, tag: string, value: number): number[] => {
  const v = [...field(1, str(tag)), 0x15, ...Buffer.from(new Float32Array([value]).buffer)];
  return [0x09, ...f64(wallTime), 0x10, ...varint(step), ...field(5, field(1, v))];
};
/** An event holding `tag` as a DT_FLOAT scalar tensor (float_val), with the scalars plugin's metadata or without any. */
const tensorEvent = (step: number, wallTime: number, tag: string, value: number, metadata: boolean): number[] => {
  const tensor = [0x08, 0x01, ...field(5, [...Buffer.from(new Float32Array([value]).buffer)])];
  const v = [...field(1, str(tag)), ...field(8, tensor), ...(metadata ? field(9, field(1, field(1, str('scalars')))) : [])];
  return [0x09, ...f64(wallTime), 0x10, ...varint(step), ...field(5, field(1, v))];
};
/** The end of the record holding the `n`-th scalar event of `bytes`. */
function afterScalarEvent(bytes: Uint8Array, n: number): number {
  let seen = 0;
  for (let at = 0; ; ) {
    const r = readTfRecord(bytes, at);
    assert.ok('data' in r, `${n} scalar events`);
    if (decodeScalarEvent(r.data) !== null && ++seen === n) return r.next;
    at = r.next;
  }
}

describe('TensorBoard logdir as a metric source', () => {
  for (const writer of WRITERS) {
    it(`serves every scalar of ${writer} as TensorBoard reads it`, async () => {
      const golden = readFixtureJson<{ scalars_by_run: Golden }>(writer, 'golden.json').scalars_by_run.slime_run;
      const s = await served(fresh(), fixturePath(writer, 'logdir'));
      const tags = Object.keys(golden);
      const meta = await s.meta();
      for (const t of tags) assert.ok(meta.metric_keys.includes(t), `${t} listed`);
      const m = await s.metrics(tags);
      for (const t of tags) {
        assert.deepEqual(m[t].x, golden[t].map((p) => p[0]), `${t} steps`);
        assert.deepEqual(m[t].y, golden[t].map((p) => p[1]), `${t} values`);
        assert.deepEqual(m[t].ts, golden[t].map((p) => p[2]), `${t} wall times`);
      }
    });
  }

  it('serves the scalars beside a slime dump, a run that records no telemetry of its own', async () => {
    const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
    const dir = fresh();
    mkdirSync(join(dir, 'rollout_data'));
    copyFileSync(fixturePath('slime-trace', 'rollout_data', '0.pt'), join(dir, 'rollout_data', '0.pt'));
    const s = await served(dir, fixturePath('tb-torch', 'logdir'));
    const tag = Object.keys(golden)[0];
    const meta = await s.meta();
    assert.ok(meta.metric_keys.includes(tag), `${tag} listed`);
    assert.deepEqual(meta.capabilities.has_metrics, true);
    assert.deepEqual((await s.metrics([tag]))[tag].y, golden[tag].map((p) => p[1]));
  });

  it('reads a file still being written to its last whole record, and the rest once it is there', async () => {
    const bytes = readFileSync(eventFile('tb-torch'));
    // the end of the last record holding a scalar (histograms and text follow it)
    let cut = 0;
    for (let at = 0; ; ) {
      const r = readTfRecord(bytes, at);
      if (!('data' in r)) break;
      if (decodeScalarEvent(r.data) !== null) cut = r.next - 7;
      at = r.next;
    }
    const logdir = fresh();
    const file = join(logdir, 'events.out.tfevents.1796592955.vm.1.0');
    writeFileSync(file, bytes.subarray(0, cut));
    const s = await served(fresh(), logdir);
    const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
    const total = Object.values(golden).reduce((k, v) => k + v.length, 0);
    const count = async () => Object.values(await s.metrics(Object.keys(golden))).reduce((k: number, v) => k + (v as { x: number[] }).x.length, 0);
    assert.equal(await count(), total - 1);
    appendFileSync(file, bytes.subarray(cut));
    await s.advance();
    assert.equal(await count(), total);
  });

  it('stops at a record whose checksum fails, keeps what came before and says so', async () => {
    const bytes = Buffer.from(readFileSync(eventFile('tb-tensorboardx')));
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    const logdir = fresh();
    writeFileSync(join(logdir, 'events.out.tfevents.1.vm'), bytes);
    const s = await served(fresh(), logdir);
    const m = await s.metrics(['train/loss']);
    assert.ok(m['train/loss'].x.length > 5 && m['train/loss'].x.length < 40, `${m['train/loss'].x.length} points before the damage`);
    const meta = await s.meta();
    assert.match(JSON.stringify(meta.warnings ?? []), /tensorboard events\.out\.tfevents\.1\.vm: bad (data|length) checksum/);
  });

  it('names the scalars of several runs by their run folder, and reads the tensor form of a scalar', async () => {
    const logdir = fresh();
    for (const [run, writer] of [['torch', 'tb-torch'], ['tbx', 'tb-tensorboardx']] as const) {
      mkdirSync(join(logdir, run));
      copyFileSync(eventFile(writer), join(logdir, run, 'events.out.tfevents.1.vm'));
    }
    // a scalar as a tensor of the scalars plugin (what tf.summary and torch's new_style write): DT_FLOAT, float_val 0.75
    mkdirSync(join(logdir, 'tf'));
    writeFileSync(join(logdir, 'tf', 'events.out.tfevents.2.vm'), tfRecord(Uint8Array.from(tensorEvent(7, 1796592999.5, 'custom/score', 0.75, true))));
    const s = await served(fresh(), logdir);
    const m = await s.metrics(['torch/train/loss', 'tbx/train/loss', 'tf/custom/score', 'train/loss']);
    assert.equal(m['torch/train/loss'].x.length, 40);
    assert.equal(m['tbx/train/loss'].x.length, 40);
    assert.equal(m['train/loss'].x.length, 0, 'with several runs a tag alone names none');
    assert.deepEqual([m['tf/custom/score'].x, m['tf/custom/score'].y, m['tf/custom/score'].ts], [[7], [0.75], [1796592999.5]]);
  });

  it('collect --tensorboard refuses a file, and takes a logdir the trainer has not created yet', () => {
    const d = fresh();
    const file = join(d, 'events.out.tfevents.1');
    mkdirSync(d, { recursive: true });
    writeFileSync(file, '');
    assert.throws(() => parseCollectFlags(['--dump-details', d, '--tensorboard', file]), /--tensorboard: .* is not a directory/);
    assert.equal(parseCollectFlags(['--dump-details', d, '--tensorboard', join(d, 'later')]).tensorboard, join(d, 'later'));
  });

  it('collect --tensorboard records the scalars as metrics while they grow, once across a restart', async () => {
    const logdir = fresh();
    cpSync(fixturePath('tb-torch', 'logdir'), logdir, { recursive: true });
    const run = fresh();
    const dash = join(run, 'dashboard');
    const tbLines = (): string[] => readFileSync(join(dash, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"tensorboard/step"'));
    for (let round = 0; round < 2; round++) {
      const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 0.1, tensorboard: logdir, log: () => {} });
      await svc.close();
    }
    const lines = tbLines();
    assert.equal(lines.length, 284);
    assert.equal(new Set(lines).size, 284);
    const s = await served(run, fresh());
    const m = await s.metrics(['train/loss']);
    const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
    assert.deepEqual(m['train/loss'].y, golden['train/loss'].map((p) => p[1]));
  });

  it('collect --tensorboard keeps a folder\'s keys when another run folder appears, across kill -9 and a restart', async () => {
    ensureCliBuilt();
    const logdir = fresh();
    const run = fresh();
    const dash = join(run, 'dashboard');
    mkdirSync(join(logdir, 'slime_run'));
    copyFileSync(eventFile('tb-torch'), join(logdir, 'slime_run', 'events.out.tfevents.1.vm'));
    const tbLines = (): string[] => {
      try {
        return readFileSync(join(dash, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"tensorboard/step"'));
      } catch {
        return [];
      }
    };
    const until = async (what: string, ok: () => boolean, out: () => string): Promise<void> => {
      for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(ok(), `${what}: ${tbLines().length} lines\n${out()}`);
    };
    const start = () => {
      const child = spawn(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', run, '--listen', '127.0.0.1:0', '--flush-interval', '0.1', '--tensorboard', logdir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      started.push(child);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      return { child, out: () => out, exited: new Promise<number | null>((r) => child.once('exit', (code) => r(code))) };
    };
    const first = start();
    await until('slime_run recorded', () => tbLines().length === 284, first.out);
    mkdirSync(join(logdir, 'other_run'));
    copyFileSync(eventFile('tb-tensorboardx'), join(logdir, 'other_run', 'events.out.tfevents.1.vm'));
    await until('other_run recorded', () => tbLines().length === 568, first.out);
    process.kill(-first.child.pid!, 'SIGKILL');
    await first.exited;
    const second = start();
    // it has read the logdir once it says where to view the run (and stops on SIGTERM from then on)
    await until('restarted', () => second.out().includes('view live:'), second.out);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.out());
    const lines = tbLines();
    assert.equal(lines.length, 568);
    assert.equal(new Set(lines).size, 568);
    const keys = new Set(lines.flatMap((l) => Object.keys(JSON.parse(l).metrics as object)));
    assert.ok(keys.has('train/loss') && keys.has('other_run/train/loss'), [...keys].join(' '));
    assert.ok(![...keys].some((k) => k.startsWith('slime_run/')), 'slime_run keeps the bare tags it was first recorded under');
    assert.deepEqual(JSON.parse(readFileSync(join(dash, 'tensorboard_runs.json'), 'utf8')).runs, { other_run: true, slime_run: false });
  });

  it('collect --tensorboard holds a folder\'s scalars while its naming cannot be written, and records them once it can', () => {
    const logdir = fresh();
    const dash = join(fresh(), 'dashboard');
    mkdirSync(join(logdir, 'slime_run'));
    copyFileSync(eventFile('tb-torch'), join(logdir, 'slime_run', 'events.out.tfevents.1.vm'));
    mkdirSync(join(dash, 'tensorboard_runs.json.tmp'), { recursive: true });
    const lines: string[] = [];
    const warnings: string[] = [];
    const tail = new TensorBoardTail(logdir, dash, (_, line) => lines.push(line), (_, m) => warnings.push(m));
    assert.equal(tail.poll(), 0);
    assert.equal(tail.poll(), 0);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /cannot write tensorboard_runs\.json .*the scalars of slime_run wait until it can be written/);
    rmSync(join(dash, 'tensorboard_runs.json.tmp'), { recursive: true });
    assert.equal(tail.poll(), 284);
    assert.equal(new Set(lines).size, 284);
    assert.ok(lines.every((l) => !l.includes('slime_run/')));
  });

  it('collect --tensorboard recognizes a folder recorded without a runs file by the events metrics.jsonl holds', async () => {
    const logdir = fresh();
    const dash = join(fresh(), 'dashboard');
    mkdirSync(join(logdir, 'slime_run'));
    copyFileSync(eventFile('tb-torch'), join(logdir, 'slime_run', 'events.out.tfevents.1.vm'));
    const round = async (): Promise<void> => {
      const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 0.1, tensorboard: logdir, log: () => {} });
      await svc.close();
    };
    await round();
    rmSync(join(dash, 'tensorboard_runs.json'), { force: true });
    // a second folder, and a third that is a copy of the first
    mkdirSync(join(logdir, 'other_run'));
    copyFileSync(eventFile('tb-tensorboardx'), join(logdir, 'other_run', 'events.out.tfevents.1.vm'));
    await round();
    mkdirSync(join(logdir, 'a_copy'));
    copyFileSync(eventFile('tb-torch'), join(logdir, 'a_copy', 'events.out.tfevents.1.vm'));
    await round();
    const lines = readFileSync(join(dash, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"tensorboard/step"'));
    assert.equal(lines.length, 3 * 284);
    assert.equal(new Set(lines).size, 3 * 284);
    assert.deepEqual(JSON.parse(readFileSync(join(dash, 'tensorboard_runs.json'), 'utf8')).runs, { a_copy: true, other_run: true, slime_run: false });
  });
  it('export metrics and export tensorboard take --tensorboard LOGDIR, as serve does, and refuse a bad one naming it', () => {
    ensureCliBuilt();
    const run = copyFixtureRun();
    try {
      const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
      const loss = golden['train/loss'];
      const out = fresh();
      const logdir = join(out, 'logdir');
      cpSync(fixturePath('tb-torch', 'logdir'), logdir, { recursive: true });
      const cli = (...args: string[]) => spawnSync(process.execPath, [RLSIGHT_BIN, 'export', ...args], { encoding: 'utf8', timeout: 60_000 });
      let r = cli('metrics', run.dir, '--tensorboard', logdir, '--out', join(out, 'm.csv'));
      assert.equal(r.status, 0, r.stderr);
      const [header, ...rows] = readFileSync(join(out, 'm.csv'), 'utf8').trimEnd().split('\n').map((l) => l.split(','));
      const col = header.indexOf('train/loss');
      assert.ok(col > 0 && header.includes('tensorboard/perf/step_time'), header.join(' '));
      const tb = rows.filter((row) => row[0] === 'tensorboard/step');
      assert.deepEqual(
        tb.map((row) => [Number(row[1]), Number(row[col])]),
        loss.map((p) => [p[0], p[1]]),
      );
      r = cli('tensorboard', run.dir, '--tensorboard', logdir, '--out', join(out, 'tb'));
      assert.equal(r.status, 0, r.stderr);
      const bytes = readFileSync(join(out, 'tb', readdirSync(join(out, 'tb'))[0]));
      const steps: number[] = [];
      for (let at = 0; at < bytes.length; ) {
        const rec = readTfRecord(bytes, at);
        assert.ok('data' in rec);
        const e = decodeScalarEvent(rec.data);
        if (e?.scalars.some((x) => x.tag === 'train/loss')) steps.push(Number(e.step));
        at = rec.next;
      }
      assert.deepEqual(steps, loss.map((p) => p[0]));
      // a missing logdir, an export into the logdir it reads
      for (const [args, said] of [
        [['metrics', run.dir, '--tensorboard', join(out, 'nope'), '--out', join(out, 'n.csv')], /--tensorboard: no such directory: .*nope/],
        [['tensorboard', run.dir, '--tensorboard', logdir, '--out', join(logdir, 'exported')], /--out: .* is inside the --tensorboard logdir .*; it is read, never written/],
      ] as [string[], RegExp][]) {
        r = cli(...args);
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, said);
      }
      assert.deepEqual(readdirSync(logdir), ['slime_run'], 'nothing written into the logdir');
    } finally {
      run.dispose();
    }
  });

  it('keeps a scalar named like one of the run\'s own keys apart, as tensorboard/KEY, and the run\'s own series whole', async () => {
    const run = copyFixtureRun();
    try {
      const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
      // the miles run logs perf/step_time on rollout/step, as slime's TensorBoard writer does on its step
      const own = (await (await served(run.dir, fresh())).metrics(['perf/step_time'], 'rollout/step'))['perf/step_time'];
      assert.ok(own.x.length > 0);
      const s = await served(run.dir, fixturePath('tb-torch', 'logdir'));
      const meta = await s.meta();
      assert.ok(meta.metric_keys.includes('tensorboard/perf/step_time'), meta.metric_keys.join(' '));
      assert.ok(meta.metric_keys.includes('train/loss') && !meta.metric_keys.includes('tensorboard/train/loss'), 'a tag the run does not log keeps its name');
      assert.deepEqual((await s.metrics(['perf/step_time'], 'rollout/step'))['perf/step_time'], own);
      assert.equal((await s.metrics(['perf/step_time'], '_time'))['perf/step_time'].x.length, own.x.length, 'on wall time the run\'s key is its own series alone');
      const m = await s.metrics(['perf/step_time', 'tensorboard/perf/step_time']);
      assert.equal(m['perf/step_time'].x.length, 0);
      assert.deepEqual([m['tensorboard/perf/step_time'].x, m['tensorboard/perf/step_time'].y], [golden['perf/step_time'].map((p) => p[0]), golden['perf/step_time'].map((p) => p[1])]);
    } finally {
      run.dispose();
    }
  });

  it('serve --follow keeps a folder\'s keys when another run folder appears', async () => {
    const bytes = readFileSync(eventFile('tb-torch'));
    const cut = afterScalarEvent(bytes, 100);
    const logdir = fresh();
    mkdirSync(join(logdir, 'a'));
    const file = join(logdir, 'a', 'events.out.tfevents.1.vm');
    writeFileSync(file, bytes.subarray(0, cut));
    const s = await served(fresh(), logdir);
    const first = (await s.metrics(['train/loss']))['train/loss'].x.length;
    assert.ok(first > 0 && first < 40, `${first} points first`);
    mkdirSync(join(logdir, 'b'));
    copyFileSync(eventFile('tb-tensorboardx'), join(logdir, 'b', 'events.out.tfevents.1.vm'));
    appendFileSync(file, bytes.subarray(cut));
    await s.advance();
    const m = await s.metrics(['train/loss', 'a/train/loss', 'b/train/loss']);
    assert.deepEqual([m['train/loss'].x.length, m['a/train/loss'].x.length, m['b/train/loss'].x.length], [40, 0, 40]);
  });

  it('reads a tensor scalar whose metadata its tag\'s first value carried (TF1 FileWriter strips it from the rest)', async () => {
    const logdir = fresh();
    const events = [tensorEvent(6, 1700000008, 't/stripped', 1, true), tensorEvent(7, 1700000009, 't/stripped', 2, false), tensorEvent(8, 1700000010, 't/other', 3, false)];
    writeFileSync(join(logdir, 'events.out.tfevents.1.vm'), Buffer.concat(events.map((e) => tfRecord(Uint8Array.from(e)))));
    const m = await (await served(fresh(), logdir)).metrics(['t/stripped', 't/other']);
    assert.deepEqual([m['t/stripped'].x, m['t/stripped'].y], [[6, 7], [1, 2]]);
    assert.equal(m['t/other'].x.length, 0, 'a tensor of a tag no value named the plugin of is not a scalar');
  });

  it('names an unreadable event by the byte it starts at, and reads on after it', async () => {
    const version = encodeEventFile([], 1700000000);
    const good = encodeEventFile([{ step: 2, wallTime: 1700000002, scalars: { x: 1 } }], 1700000000).subarray(version.length);
    const logdir = fresh();
    // a record whose checksums hold but whose event is cut inside a varint
    writeFileSync(join(logdir, 'events.out.tfevents.1.vm'), Buffer.concat([version, tfRecord(Uint8Array.from([0x10, 0xff])), good]));
    const s = await served(fresh(), logdir);
    assert.deepEqual((await s.metrics(['x'])).x.x, [2]);
    assert.match(JSON.stringify((await s.meta()).warnings), new RegExp(`events\\.out\\.tfevents\\.1\\.vm: the event at byte ${version.length} is not readable \\(truncated varint\\)`));
  });

  it('collect --tensorboard keeps scalars named like the run\'s own keys apart, each key\'s name fixed when first recorded', async () => {
    const bytes = readFileSync(eventFile('tb-torch'));
    const cut = afterScalarEvent(bytes, 100);
    const logdir = fresh();
    writeFileSync(join(logdir, 'events.out.tfevents.1.vm'), bytes.subarray(0, cut));
    const dash = join(fresh(), 'dashboard');
    mkdirSync(dash);
    copyFileSync(fixturePath('miles-demo', 'run', 'dashboard', 'metrics.jsonl'), join(dash, 'metrics.jsonl'));
    const round = async (): Promise<void> => {
      const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 0.1, tensorboard: logdir, log: () => {} });
      await svc.close();
    };
    await round();
    // the trainer now logs train/loss itself: the scalar recorded as train/loss stays train/loss, across a restart
    appendFileSync(join(dash, 'metrics.jsonl'), '{"ts":1000999.0,"step_key":"rollout/step","step":9,"metrics":{"train/loss":0.5}}\n');
    appendFileSync(join(logdir, 'events.out.tfevents.1.vm'), bytes.subarray(cut));
    await round();
    await round();
    const lines = readFileSync(join(dash, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"tensorboard/step"'));
    assert.equal(lines.length, 284);
    const keys = new Set(lines.flatMap((l) => Object.keys(JSON.parse(l).metrics as object)));
    assert.ok(keys.has('tensorboard/perf/step_time') && !keys.has('perf/step_time'), [...keys].join(' '));
    assert.ok(keys.has('train/loss') && !keys.has('tensorboard/train/loss'), [...keys].join(' '));
    assert.deepEqual(JSON.parse(readFileSync(join(dash, 'tensorboard_runs.json'), 'utf8')).keys['perf/step_time'], true);
    const m = await (await served(join(dash, '..'), fresh())).metrics(['train/loss', 'tensorboard/perf/step_time']);
    const golden = readFixtureJson<{ scalars_by_run: Golden }>('tb-torch', 'golden.json').scalars_by_run.slime_run;
    assert.deepEqual(m['train/loss'].y, golden['train/loss'].map((p) => p[1]));
    assert.deepEqual(m['tensorboard/perf/step_time'].y, golden['perf/step_time'].map((p) => p[1]));
  });

  it('collect --tensorboard records a step beyond 2^53 once across a restart, and says once that it was rounded', async () => {
    const logdir = fresh();
    const huge = 2n ** 53n + 1n;
    const events = [simpleEvent(huge, 1700000002, 'huge', 7), simpleEvent(huge + 2n, 1700000003, 'huge', 8), simpleEvent(3, 1700000004, 'huge', 9)];
    writeFileSync(join(logdir, 'events.out.tfevents.1.vm'), Buffer.concat(events.map((e) => tfRecord(Uint8Array.from(e)))));
    const dash = join(fresh(), 'dashboard');
    const warnings: string[] = [];
    for (let round = 0; round < 2; round++) {
      const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 0.1, tensorboard: logdir, log: (level, m) => level === 'warn' && warnings.push(m) });
      await svc.close();
    }
    const lines = readFileSync(join(dash, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"tensorboard/step"'));
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.equal(warnings.length, 2, 'once per reading of the file');
    assert.match(warnings[0], /events\.out\.tfevents\.1\.vm: the event at byte 0: step 9007199254740993 is beyond 2\^53, read as 9007199254740992 \(steps this large are rounded; later ones are not reported\)$/);
  });
});
