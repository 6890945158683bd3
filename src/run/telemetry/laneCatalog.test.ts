import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { compareLanes, compareNodes, laneEntries } from './laneCatalog.ts';

test('nodes order naturally: IPv4 by octet, host names by their numbers', () => {
  const sorted = ['10.0.1.10', '10.0.1.2', '10.0.1.1', '10.0.2.1', '9.255.0.1', '10.0.1.100'].sort(compareNodes);
  assert.deepEqual(sorted, ['9.255.0.1', '10.0.1.1', '10.0.1.2', '10.0.1.10', '10.0.1.100', '10.0.2.1']);
  assert.deepEqual(['node-10', 'node-2', 'node-1', 'gpu-a2', 'node-02'].sort(compareNodes), ['gpu-a2', 'node-1', 'node-2', 'node-02', 'node-10']);
  // Digit runs longer than a double's precision still compare exactly.
  assert.ok(compareNodes('h12345678901234567890', 'h12345678901234567891') < 0);
});

test('the node order is a total order consistent with equality', () => {
  const name = fc.stringMatching(/^[a-z0-9.-]{0,8}$/);
  fc.assert(
    fc.property(name, name, name, (a, b, c) => {
      assert.equal(Math.sign(compareNodes(a, b)), -Math.sign(compareNodes(b, a)) || 0);
      assert.equal(compareNodes(a, b) === 0, a === b);
      if (compareNodes(a, b) <= 0 && compareNodes(b, c) <= 0) assert.ok(compareNodes(a, c) <= 0);
    }),
  );
});

test('lane entries: node in cluster order, then GPU index; the index follows that order', () => {
  const facts = ['10.0.1.10:0', '10.0.1.2:1', '10.0.1.2:0', '10.0.1.1:7'].map((k) => {
    const [node, gpu] = k.split(':');
    return { node: node!, gpu: Number(gpu), ranks: new Set<number>(), engineAddrs: new Set<string>(), roles: new Set<string>() };
  });
  assert.deepEqual(
    laneEntries(facts).map((l) => `${l.index}=${l.node}:${l.gpu}`),
    ['0=10.0.1.1:7', '1=10.0.1.2:0', '2=10.0.1.2:1', '3=10.0.1.10:0'],
  );
  assert.ok(compareLanes({ node: 'n2', gpu: 9 }, { node: 'n10', gpu: 0 }) < 0);
});
