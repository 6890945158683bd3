// `rlsight health` as a CI gate: a directory that is not a run is bad usage (2), a damaged step is a row
// marked damaged and exit 3 (could not read everything), a fired signal is 1; the demo's collapse run trips
// the zero-std gate at its documented threshold and the healthy run does not.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { generateDemoRun } from '../src/demo/index.ts';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';

ensureCliBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function cli(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { cwd: REPO, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('health on what is not a run', () => {
  let base: string;
  before(() => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-health-notrun-'));
    writeFileSync(join(base, 'a-file'), 'x');
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  test('an empty directory, a missing one and a file exit 2 with a message, never 0', () => {
    const empty = cli('health', '--dump-details', base);
    assert.equal(empty.code, 2, empty.stdout);
    assert.match(empty.stderr, /not a run: .* holds no rollout dumps or telemetry/);
    const missing = cli('health', '--dump-details', join(base, 'nope'));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no such directory/);
    const file = cli('health', '--dump-details', join(base, 'a-file'));
    assert.equal(file.code, 2);
    assert.match(file.stderr, /not a directory/);
  });
});

describe('health on a run with a damaged step', () => {
  let run: RunCopy;
  const dump = 'rollout_data/0.pt';
  before(() => {
    run = copyFixtureRun('miles-demo');
    const path = join(run.dir, dump);
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, bytes.length >> 1));
    // Older than the freshness window: damaged, not still being written.
    const old = Date.now() / 1000 - 3600;
    utimesSync(path, old, old);
  });
  after(() => run.dispose());

  test('the CLI marks the row damaged, names the file and exits 3; a fired gate still exits 1', () => {
    const r = cli('health', '--dump-details', run.dir, '--json');
    assert.equal(r.code, 3, r.stderr);
    const board = JSON.parse(r.stdout) as { rows: { step: number; damaged?: string; cells: Record<string, { detail: string }> }[]; warnings: string[] };
    const row = board.rows.find((x) => x.step === 0)!;
    assert.match(row.damaged ?? '', /0\.pt/);
    assert.match(row.cells.lp_drift!.detail, /^dump damaged: .*0\.pt/);
    assert.ok(board.warnings.some((w) => /^step 0: damaged: .*0\.pt/.test(w)), board.warnings.join('\n'));
    assert.match(r.stderr, /warning: step 0: damaged: .*0\.pt/);
    assert.equal(cli('health', '--dump-details', run.dir, '--fail-on', 'engine_restart').code, 1);
  });

  test('the server answers the board with the damaged row, not a 422', async () => {
    const app = createApp({ run: await openRun(run.dir) });
    const res = await app.request('/api/rlsight/health', { headers: { host: '127.0.0.1' } });
    assert.equal(res.status, 200);
    const board = (await res.json()) as { rows: { step: number; damaged?: string }[] };
    assert.match(board.rows.find((x) => x.step === 0)?.damaged ?? '', /0\.pt/);
  });
});

describe("the demo's zero-std story trips the gate at its documented threshold", () => {
  let base: string;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-health-gate-'));
    for (const collapse of [false, true]) await generateDemoRun(join(base, collapse ? 'collapse' : 'healthy'), { collapse });
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  test('the collapse run reaches 0.5 and --fail-on zero_std exits 1; the healthy run exits 0', () => {
    const collapse = cli('health', '--dump-details', join(base, 'collapse'), '--fail-on', 'zero_std');
    assert.equal(collapse.code, 1, collapse.stderr);
    assert.match(collapse.stderr, /fired: step \d+: zero_std 0\.5000 >= 0\.5 \(8\/16 groups/);
    const healthy = cli('health', '--dump-details', join(base, 'healthy'), '--fail-on', 'zero_std');
    assert.equal(healthy.code, 0, healthy.stderr);
  });
});
