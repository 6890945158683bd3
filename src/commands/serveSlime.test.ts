// Which `serve` arguments name a slime run: every serve option's value stays an option value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { isSlimeServe } from './serveSlime.ts';

test('serve options taking a value never turn their value into a run to look at', () => {
  const miles = fixturePath('miles-demo', 'run');
  const slime = fixturePath('slime-trace');
  for (const opts of [[], ['--memory-budget', '128'], ['--health-config', 'health.json'], ['--cache-dir', 'cache'], ['--tensor-lru', '3'], ['--runs', miles]]) {
    assert.equal(isSlimeServe([miles, ...opts]), false, `miles run with ${opts.join(' ')}`);
    assert.equal(isSlimeServe(['--dump-details', miles, ...opts]), false, `--dump-details miles run with ${opts.join(' ')}`);
    assert.equal(isSlimeServe(['--dump-details', slime, ...opts]), true, `slime run with ${opts.join(' ')}`);
  }
  assert.equal(isSlimeServe(['rollout_*.pt', '--memory-budget', '64']), true);
});
