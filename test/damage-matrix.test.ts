// The damage matrix: every kind of damage (empty, truncated, flipped bytes, another file's content, a directory,
// a FIFO, a symlink loop) over every file kind of a run. For every case the server starts, every endpoint
// answers (no hang, no 5xx), nothing in the run changes, and each damaged file is named in a 422 or a warning.
// One server per damage kind and file group keeps this to a few dozen servers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lutimesSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { askEndpoint, everyEndpoint } from './support/endpoints.ts';
import { copyFixtureRun } from './support/fixtures.ts';

/** A request unanswered after this long is a hang (generous: CI machines are shared; bench/fuzz.ts times the real answers). */
const OLD = Date.now() / 1000 - 86_400;

/** Two groups of files, damaged together: no file of a group hides another's damage (a step's rollout dump and its rank file would). */
const GROUPS = [
  [
    'rollout_data/2.pt',
    'dashboard_columns/rollout_0.parquet',
    'dashboard_columns/rollout_1.parquet',
    'trajectory/1.jsonl',
    'tokenizer/tokenizer.json',
    'dashboard/metrics.jsonl',
    'dashboard/gpu_util/19700112_13.jsonl',
    'dashboard/lane_catalog.json',
  ],
  [
    'train_data/1_0.pt',
    'rollout_data/eval_0.pt',
    'dashboard/meta.json',
    'dashboard/topology.jsonl',
    'dashboard/phases/19700112_13.jsonl',
    'dashboard/engine_series/19700112_13.jsonl',
    'dashboard/trajectories/19700112_13.jsonl',
  ],
];

const isLines = (f: string): boolean => f.endsWith('.jsonl');

interface Damage {
  name: string;
  apply(path: string, file: string): void;
  /** Whether the damage is detectable in `file` (an empty or cut JSONL stream is just a shorter one). */
  named(file: string): boolean;
}

function replaceWith(path: string, make: () => void): void {
  rmSync(path, { recursive: true, force: true });
  make();
}

const DAMAGES: Damage[] = [
  { name: 'empty', apply: (p) => writeFileSync(p, ''), named: (f) => !isLines(f) },
  { name: 'truncated at a third', apply: (p) => truncateSync(p, Math.floor(statSync(p).size / 3)), named: (f) => !isLines(f) },
  { name: 'truncated by one byte', apply: (p) => truncateSync(p, statSync(p).size - 1), named: (f) => !isLines(f) && !f.endsWith('.json') },
  {
    name: 'bytes flipped',
    apply: (p, f) => {
      const b = readFileSync(p);
      // Where each format notices: a zip's first header, a parquet footer, a text line's middle.
      const at = f.endsWith('.pt') ? 2 : f.endsWith('.parquet') ? b.length - 24 : Math.floor(b.length / 2);
      // A control byte is invalid anywhere in JSON (inside a string too); in binary formats any change will do.
      for (let i = 0; i < 12 && at + i < b.length; i++) b[at + i] = f.endsWith('.pt') || f.endsWith('.parquet') ? b[at + i] ^ 0xff : 0x01;
      writeFileSync(p, b);
    },
    // The engine stream is read selectively (one metric's lines are decoded, the others only skipped), so a
    // flipped line of a metric no answer asks for goes unnoticed; every other file names its damage.
    named: (f) => !f.startsWith('dashboard/engine_series/'),
  },
  {
    name: 'another kind of file',
    apply: (p, f) => writeFileSync(p, f.endsWith('.json') || isLines(f) ? Buffer.from([0x50, 0x4b, 3, 4, 0, 0xff, 0xfe, 10, 0x80, 0x02, 10]) : '{"version": 1}\n'),
    named: () => true,
  },
  { name: 'a directory', apply: (p) => replaceWith(p, () => mkdirSync(p)), named: () => true },
  { name: 'a FIFO', apply: (p) => replaceWith(p, () => execFileSync('mkfifo', [p])), named: () => true },
  { name: 'a symlink loop', apply: (p) => replaceWith(p, () => symlinkSync(p.split('/').pop()!, p)), named: () => true },
];

/** Path → kind, size and mtime of everything under `root` (lstat: links and FIFOs are not followed). */
function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    const p = join(root, rel);
    const st = statSafe(p);
    out.set(rel, st);
    if (st.startsWith('d')) for (const n of readdirSync(p).sort()) walk(rel ? `${rel}/${n}` : n);
  };
  walk('');
  return out;
}

function statSafe(p: string): string {
  const st = (() => {
    try {
      return require_lstat(p);
    } catch {
      return null;
    }
  })();
  return st ?? 'gone';
}

function require_lstat(p: string): string {
  const st = statSync(p, { throwIfNoEntry: false }) ?? null;
  // statSync follows links; a loop throws, which statSafe reports by kind below.
  if (st === null) return 'missing';
  return `${st.isDirectory() ? 'd' : st.isFIFO() ? 'p' : 'f'}:${st.size}:${st.mtimeMs}`;
}


describe('damage matrix over every file kind of a run', () => {
  for (const damage of DAMAGES) {
    GROUPS.forEach((files, g) => {
      test(`${damage.name}: ${files.length} files of group ${g + 1}`, async () => {
        const run = copyFixtureRun();
        try {
          for (const f of files) {
            damage.apply(join(run.dir, f), f);
            // Aged like the rest of the copy: a young file that fails to decode is "still being written" (503).
            lutimesSync(join(run.dir, f), OLD, OLD);
          }
          const before = snapshot(run.dir);
          const server = await startServer(await openRun(run.dir), { port: 0 });
          let answers;
          try {
            // Two rounds: cold, then again with whatever the first round cached or found damaged.
            answers = await Promise.all(everyEndpoint().map((p) => askEndpoint(server.url, p)));
            answers.push(...(await Promise.all(everyEndpoint().map((p) => askEndpoint(server.url, p)))));
          } finally {
            await server.close();
          }
          const bad = answers.filter((a) => a.status === 0 || a.status >= 500).map((a) => `${a.status} ${a.path} ${JSON.stringify(a.body).slice(0, 200)}`);
          assert.deepEqual(bad, [], 'no hang and no 5xx');
          for (const a of answers) assert.ok([200, 404, 422, 503].includes(a.status), `${a.status} ${a.path}`);
          assert.deepEqual(snapshot(run.dir), before, 'the run tree is unchanged');
          const metas = answers.filter((a) => a.path === '/api/meta');
          assert.ok(metas.every((m) => m.status === 200), '/api/meta always answers');
          const named = [
            ...answers.filter((a) => a.status === 422).map((a) => String(a.body?.detail)),
            ...answers.flatMap((a) => (Array.isArray(a.body?.warnings) ? a.body.warnings : [])),
          ].join('\n');
          for (const f of files) if (damage.named(f)) assert.ok(named.includes(f), `${f} is named; got:\n${named}`);
          assert.ok(!named.includes(run.dir), 'no absolute path of the machine in an answer');
          for (const p of ['/api/metrics?keys=perf/actor_train_mfu,rollout/rewards_mean', '/api/advisory', '/api/rlsight/advisory', '/api/timeline/fleet?x_buckets=100']) {
            assert.ok(answers.filter((a) => a.path === p).every((a) => a.status === 200), `${p} is a run-wide answer: 200`);
          }
        } finally {
          run.dispose();
        }
      });
    });
  }
});
