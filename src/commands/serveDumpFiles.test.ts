// Which `serve` arguments name dump files rather than run directories: every serve option's value stays an option value.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { SERVE_OPTIONS } from './serve.ts';
import { isDumpFilesServe } from './serveDumpFiles.ts';

test('serve options taking a value never turn their value into a run to look at', () => {
  const miles = fixturePath('miles-demo', 'run');
  const slime = fixturePath('slime-trace');
  for (const opts of [[], ['--memory-budget', '128'], ['--health-config', 'health.json'], ['--cache-dir', 'cache'], ['--tensor-lru', '3'], ['--runs', miles]]) {
    assert.equal(isDumpFilesServe([miles, ...opts]), false, `miles run with ${opts.join(' ')}`);
    assert.equal(isDumpFilesServe(['--dump-details', miles, ...opts]), false, `--dump-details miles run with ${opts.join(' ')}`);
    // A slime-layout folder is a run directory like any other (opened by its format's adapter).
    assert.equal(isDumpFilesServe(['--dump-details', slime, ...opts]), false, `--dump-details slime run with ${opts.join(' ')}`);
    assert.equal(isDumpFilesServe([slime, miles, ...opts]), false, `slime and miles runs with ${opts.join(' ')}`);
  }
  assert.equal(isDumpFilesServe(['rollout_*.pt', '--memory-budget', '64']), true);
  assert.equal(isDumpFilesServe([join(slime, 'rollout_data', '1.pt')]), true);
  assert.equal(isDumpFilesServe([join(slime, 'rollout_data', 'nope.pt')]), true, 'a missing .pt is a missing dump');
  assert.equal(isDumpFilesServe(['no-such-run']), false, 'a missing name is a missing run directory');
});

test('the value of every serve option, even a path that does not exist, is never taken for dump files', () => {
  const miles = fixturePath('miles-demo', 'run');
  const valued = Object.entries(SERVE_OPTIONS).filter(([, o]) => o.type === 'string').map(([name]) => name);
  assert.ok(valued.includes('tensorboard') && valued.includes('prometheus'), valued.join(' '));
  for (const name of valued) assert.equal(isDumpFilesServe([miles, `--${name}`, 'no/such/path']), false, `--${name}`);
});
