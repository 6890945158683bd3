// A long fuzz run against a live server: random and hostile requests over a copy of the miles-demo run with
// hostile dumps added (stride-0 views of 2^28 elements, a 200,000-lane catalog, one sample listed 2,000,000
// times, a 4 MiB integer, lists nested 500,000 deep). Prints one JSON line: cases, statuses, 5xx, crashes,
// hangs, peak RSS of the server (overall and while hostile dumps were being asked for).
// Run by hand: node --import tsx bench/fuzz.ts [cases] [concurrency]
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import { Storage, Tensor } from '../src/formats/torch/value.ts';
import { saveTorch } from '../src/formats/torch/writer.ts';
import { ageTree, copyFixtureRun } from '../test/support/fixtures.ts';
import { everyEndpoint } from '../test/support/endpoints.ts';

const CASES = Number(process.argv[2] ?? 100_000);
const CONCURRENCY = Number(process.argv[3] ?? 24);
const HANG_MS = 10_000;
const repo = resolve(import.meta.dirname, '..');

let seed = 0x12345;
const rand = (): number => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

/** A STORED zip holding `<root>/data.pkl` = `pkl` (and a byteorder record), as torch.save lays it out. */
function torchZip(root: string, pkl: Uint8Array): Buffer {
  const files: [string, Uint8Array][] = [[`${root}/data.pkl`, pkl], [`${root}/byteorder`, Buffer.from('little')]];
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of files) {
    const n = Buffer.from(name);
    const crc = crc32(data);
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(data.length, 18);
    lh.writeUInt32LE(data.length, 22);
    lh.writeUInt16LE(n.length, 26);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(20, 4);
    ch.writeUInt16LE(20, 6);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(data.length, 20);
    ch.writeUInt32LE(data.length, 24);
    ch.writeUInt16LE(n.length, 28);
    ch.writeUInt32LE(offset, 42);
    parts.push(lh, n, Buffer.from(data));
    central.push(ch, n);
    offset += 30 + n.length + data.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, cd, end]);
}

const str = (s: string): number[] => [0x8c, s.length, ...Buffer.from(s)];
const rolloutHead = (id: number): number[] => [0x80, 2, 0x7d, ...str('rollout_id'), 0x4b, id, 0x73, ...str('samples')];

/** Adds the hostile dumps to a run copy: steps 3-6 and a train file of step 7; a huge lane catalog. */
export async function addHostileDumps(dir: string): Promise<void> {
  // Step 3: one sample record listed 2,000,000 times by memo reference (~6 MB of pickle).
  const copies = 2_000_000;
  const listed = Buffer.alloc(copies * 3);
  for (let i = 0; i < copies; i++) listed.set([0x68, 0, 0x61], i * 3);
  writeFileSync(join(dir, 'rollout_data', '3.pt'), torchZip('3', Buffer.concat([Buffer.from([...rolloutHead(3), 0x5d, 0x7d, 0x71, 0, 0x61]), listed.subarray(3), Buffer.from([0x73, 0x2e])])));
  // Step 4: rollout_id as a 4 MiB LONG4 integer.
  const n = 4 * 2 ** 20;
  const long = Buffer.alloc(5 + n, 0x7f);
  long[0] = 0x8b;
  long.writeInt32LE(n, 1);
  writeFileSync(join(dir, 'rollout_data', '4.pt'), torchZip('4', Buffer.concat([Buffer.from([0x80, 2, 0x7d, ...str('rollout_id')]), long, Buffer.from([0x73, 0x2e])])));
  // Step 5: samples nested 500,000 lists deep.
  const depth = 500_000;
  writeFileSync(join(dir, 'rollout_data', '5.pt'), torchZip('5', Buffer.concat([Buffer.from(rolloutHead(5)), Buffer.alloc(depth, 0x5d), Buffer.alloc(depth - 1, 0x61), Buffer.from([0x73, 0x2e])])));
  // Step 6 (rollout copied from step 1) with a 40 KB train file whose tensors are stride-0 views of 2^28 elements.
  writeFileSync(join(dir, 'rollout_data', '6.pt'), readFileSync(join(dir, 'rollout_data', '1.pt')));
  const tiny = Storage.fromBytes('0', 'float32', new Uint8Array(16));
  const view = (): Tensor => new Tensor('float32', [2 ** 28], [0], 0, tiny);
  await saveTorch(
    {
      rollout_data: {
        sample_indices: [32, 33],
        response_lengths: [2 ** 28, 2 ** 28],
        total_lengths: [2 ** 28, 2 ** 28],
        log_probs: [view(), view()],
        entropy: [view(), view()],
        advantages: [view(), view()],
        loss_masks: [view(), view()],
      },
      rank: 0,
    },
    join(dir, 'train_data', '6_0.pt'),
  );
  // A lane catalog of 200,000 lanes (~15 MB).
  const lanes: Record<string, unknown> = {};
  for (let i = 0; i < 200_000; i++) lanes[`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:${i % 8}`] = { ranks: [i], engine_addrs: [], roles: ['train'] };
  writeFileSync(join(dir, 'dashboard', 'lane_catalog.json'), JSON.stringify({ version: 1, lanes }));
  ageTree(dir);
}

const HOSTILE = ['/api/rollout/3/summary', '/api/rollout/4/groups', '/api/rollout/5/summary', '/api/rollout/6/summary', '/api/rollout/6/sample/32/tokens', '/api/timeline/heatmap?metric=util&x_buckets=4000', '/api/timeline/fleet?x_buckets=4000', '/api/metrics?keys=dump/reward_mean', '/api/advisory'];
const PATHS = ['/api/metrics', '/api/advisory', '/api/rlsight/advisory', '/api/timeline/phases', '/api/timeline/gpu', '/api/timeline/heatmap', '/api/timeline/fleet', '/api/timeline/outliers', '/api/timeline/engine_series', '/api/timeline/topology', '/api/timeline/bubbles', '/api/rlsight/lanes', '/api/rollout/1/summary', '/api/rollout/2/groups', '/api/rollout/1/trajectories', '/api/rollout/1/sample/32/tokens', '/api/rollout/0/sample/0/messages', '/api/meta'];
const NAMES = ['t0', 't1', 'keys', 'x', 'lanes', 'metric', 'x_buckets', 'max_points', 'criterion', 'top_k', 'per_dp_rank', 'eval', 'start', 'end', 'sample_index'];
const VALUES = ['', 'NaN', 'inf', '-1', '0', '1', '7', '1e309', '99999999999999999999', '1000100.5', '999999', 'g:0-7', 'rank:0-3,every:2', 'node:10.0.0.1', 'util', 'phase', 'lowest_util', 'dump/reward_mean', 'perf/actor_train_mfu', 'true', 'maybe', '%00', '..', 'x'.repeat(300)];

function randomRequest(): string {
  const r = rand();
  if (r < 0.05) return pick(HOSTILE);
  if (r < 0.15) return pick(everyEndpoint());
  if (r < 0.2) {
    // random path segments
    const segs = Array.from({ length: 1 + Math.floor(rand() * 5) }, () => pick(['api', 'rollout', 'sample', 'tokens', 'timeline', '-1', '1e3', '..', '%2e%2e', String(Math.floor(rand() * 1e6)), 'static', 'index.html']));
    return `/${segs.join('/')}`;
  }
  const q = new URLSearchParams();
  const k = Math.floor(rand() * 5);
  for (let i = 0; i < k; i++) q.append(pick(NAMES), rand() < 0.3 ? String(Math.floor((rand() - 0.3) * 2e6)) : pick(VALUES));
  const s = q.toString();
  return `${pick(PATHS)}${s ? `?${s}` : ''}`;
}

function rssOf(pid: number): { rss: number; hwm: number } {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
    return { rss: kb('VmRSS') * 1024, hwm: kb('VmHWM') * 1024 };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

async function main(): Promise<void> {
  const run = copyFixtureRun();
  await addHostileDumps(run.dir);
  const port = 20000 + Math.floor(Math.random() * 20000);
  let crashes = 0;
  let server = spawnServer(run.dir, port);
  const statuses: Record<string, number> = {};
  const fivexx: string[] = [];
  let hangs = 0;
  let peakRss = 0;
  let hostilePeakRss = 0;
  let hostileInFlight = 0;
  let slowest = 0;
  const sampler = setInterval(() => {
    const { rss } = rssOf(server.pid!);
    peakRss = Math.max(peakRss, rss);
    if (hostileInFlight > 0) hostilePeakRss = Math.max(hostilePeakRss, rss);
  }, 50);
  await waitUp(port);
  const started = Date.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= CASES) return;
      const path = randomRequest();
      const hostile = HOSTILE.includes(path);
      if (hostile) hostileInFlight++;
      const t = Date.now();
      try {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(HANG_MS) });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status >= 500 && fivexx.length < 20) fivexx.push(`${res.status} ${path}`);
        else if (res.status >= 500) fivexx.push('');
      } catch (e) {
        if ((e as Error).name === 'TimeoutError') hangs++;
        else if (server.exitCode !== null || server.signalCode !== null) {
          crashes++;
          server = spawnServer(run.dir, port);
          await waitUp(port);
        } else statuses.error = (statuses.error ?? 0) + 1;
      } finally {
        slowest = Math.max(slowest, Date.now() - t);
        if (hostile) hostileInFlight--;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);
  const final = rssOf(server.pid!);
  server.kill();
  run.dispose();
  const mib = (b: number): number => Math.round(b / 2 ** 20);
  console.log(
    JSON.stringify({
      bench: 'fuzz',
      cases: CASES,
      concurrency: CONCURRENCY,
      seconds: Math.round(seconds),
      requests_per_s: Math.round(CASES / seconds),
      statuses,
      '5xx': fivexx.length,
      '5xx_examples': fivexx.filter(Boolean),
      crashes,
      hangs,
      slowest_ms: slowest,
      peak_rss_mib: mib(Math.max(peakRss, final.hwm)),
      hostile_peak_rss_mib: mib(hostilePeakRss),
      load_avg_1m: Number(loadavg()[0].toFixed(1)),
    }),
  );
}

function spawnServer(dir: string, port: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repo, 'src', 'cli.ts'), 'serve', '--dump-details', dir, '--port', String(port), '--no-cache'], { stdio: ['ignore', 'ignore', 'pipe'], cwd: repo });
  child.stderr.resume();
  return child;
}

async function waitUp(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/meta`);
      await res.arrayBuffer();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error('the server did not start');
}

if (process.argv[1]?.endsWith("fuzz.ts")) await main();
