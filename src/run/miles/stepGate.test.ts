import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepGate } from './stepGate.ts';

/** Settles after every pending microtask (the gate admits through promise resolution). */
const settle = () => new Promise<void>((r) => setImmediate(r));

test('one step at a time: an asked step goes ahead of background reads that came first', async () => {
  const gate = new StepGate(0);
  const order: string[] = [];
  const first = gate.enter('background');
  const waitingBg = gate.enter('background');
  const asked = gate.enter('asked');
  for (const [name, t] of [['first', first], ['bg', waitingBg], ['asked', asked]] as const) void t.turn.then(() => order.push(name));
  await settle();
  assert.deepEqual(order, ['first'], 'the gate admits one ticket');
  first.release();
  await settle();
  assert.deepEqual(order, ['first', 'asked'], 'the asked step is next though it came last');
  asked.release();
  await settle();
  assert.deepEqual(order, ['first', 'asked', 'bg']);
  waitingBg.release();
  assert.deepEqual(gate.load, { inside: false, waiting: 0 });
});

test('a background read leaves an idle gate to the asked steps of the same moment, and is lifted when someone asks for it', async () => {
  const gate = new StepGate(60_000);
  const bg = gate.enter('background');
  await settle();
  assert.deepEqual(gate.load, { inside: false, waiting: 1 }, 'within its grace a background read does not take the gate');
  const asked = gate.enter('asked');
  assert.deepEqual(gate.load, { inside: true, waiting: 1 }, 'an asked step takes it at once');
  asked.release();
  assert.deepEqual(gate.load, { inside: false, waiting: 1 });
  bg.ask();
  assert.deepEqual(gate.load, { inside: true, waiting: 0 }, 'asked for, it no longer waits for its grace');
  bg.release();
  bg.release();
  assert.deepEqual(gate.load, { inside: false, waiting: 0 }, 'release is idempotent');
});

test('a background read takes the idle gate once its grace has passed; a ticket released before its turn frees its place', async () => {
  const gate = new StepGate(5);
  const gone = gate.enter('background');
  gone.release();
  const bg = gate.enter('background');
  await bg.turn;
  assert.deepEqual(gate.load, { inside: true, waiting: 0 });
  bg.release();
});

test('a background read right after another one ends continues a whole-run read: it waits for no grace, and an asked step still goes first', async () => {
  const gate = new StepGate(50);
  const first = gate.enter('background');
  await first.turn;
  first.release();
  const next = gate.enter('background');
  assert.deepEqual(gate.load, { inside: true, waiting: 0 }, 'the next step of the whole-run read takes the idle gate at once');
  const asked = gate.enter('asked');
  const after = gate.enter('background');
  next.release();
  assert.deepEqual(gate.load, { inside: true, waiting: 1 });
  let askedIn = false;
  void asked.turn.then(() => (askedIn = true));
  await settle();
  assert.equal(askedIn, true, 'the asked step is admitted before the waiting background read');
  asked.release();
  after.release();
  // a background read long after the last one ended waits for its grace again
  const late = new StepGate(60_000);
  late.enter('background');
  assert.deepEqual(late.load, { inside: false, waiting: 1 });
});
