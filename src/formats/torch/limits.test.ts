// Hostile pickles and torch archives: every resource limit refuses before it allocates.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PickleError, TorchFormatError } from './errors.ts';
import { openTorchFile } from './load.ts';
import { readTensorNumbers, tensorDataFromBytes } from './tensorData.ts';
import { PICKLE_LIMITS, unpickle } from './unpickle.ts';
import { Storage, Tensor } from './value.ts';
import { saveTorch } from './writer.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-limits-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A protocol-2 pickle of the given opcode bytes followed by STOP. */
function pickle(...parts: (number[] | Uint8Array)[]): Uint8Array {
  const body = parts.flatMap((p) => [...p]);
  return Uint8Array.from([0x80, 2, ...body, 0x2e]);
}

function repeat(bytes: number[], n: number): Uint8Array {
  const out = new Uint8Array(bytes.length * n);
  for (let i = 0; i < n; i++) out.set(bytes, i * bytes.length);
  return out;
}

describe('pickle resource limits', () => {
  it('refuses a LONG4 integer wider than the limit without building it', () => {
    const n = 4 * 2 ** 20;
    const b = new Uint8Array(2 + 5 + n + 1);
    b.set([0x80, 2, 0x8b]);
    new DataView(b.buffer).setInt32(3, n, true);
    b.fill(0x7f, 7, 7 + n);
    b[b.length - 1] = 0x2e;
    assert.throws(() => unpickle(b, { file: 'long4.pkl' }), (e: unknown) => e instanceof PickleError && /integer of 4194304 bytes exceeds the limit/.test(e.message) && e.message.startsWith('long4.pkl'));
  });

  it('still reads the widest LONG4 within the limit', () => {
    const n = PICKLE_LIMITS.maxIntBytes;
    const b = Uint8Array.from([0x80, 2, 0x8b, n & 0xff, n >> 8, 0, 0, ...new Array(n - 1).fill(0), 1, 0x2e]);
    assert.equal(unpickle(b, { file: 'x' }).value, 1n << BigInt(8 * (n - 1)));
  });

  it('refuses an INT text literal longer than CPython accepts', () => {
    const digits = new TextEncoder().encode('9'.repeat(100_000));
    assert.throws(() => unpickle(pickle([0x49], digits, [0x0a]), { file: 'int.pkl' }), /integer literal of 100000 characters exceeds the limit/);
  });

  it('refuses lists nested 500,000 deep', () => {
    const n = 500_000;
    const b = pickle(repeat([0x5d], n), repeat([0x61], n - 1));
    assert.throws(() => unpickle(b, { file: 'nest.pkl' }), (e: unknown) => e instanceof PickleError && /nested deeper than 1000 levels/.test(e.message));
  });

  it('refuses tuples nested deep with one stack slot (TUPLE1 chains)', () => {
    const b = pickle([0x4e], repeat([0x85], 200_000));
    assert.throws(() => unpickle(b, { file: 't.pkl' }), /nested deeper than/);
  });

  it('accepts nesting at the limit, and shared memo references (a DAG) are walked once', () => {
    const ok = pickle(repeat([0x5d], PICKLE_LIMITS.maxNesting), repeat([0x61], PICKLE_LIMITS.maxNesting - 1));
    assert.ok(Array.isArray(unpickle(ok, { file: 'x' }).value));
    // Each level is a tuple holding the level below twice (memo GET): 2^60 paths, 60 levels.
    const parts: number[] = [0x4e];
    for (let i = 0; i < 60; i++) parts.push(0x94, 0x68, i, 0x86);
    assert.ok(Array.isArray(unpickle(Uint8Array.from([0x80, 4, ...parts, 0x2e]), { file: 'x' }).value));
  });

  it('refuses nesting reached through a shared memo reference: a 600-deep list held again 600 levels down', () => {
    const d = 600;
    // outer = [A, B]: A a list nested d deep (memo 0); B a chain d deep whose innermost list holds A again
    const b = pickle([0x5d], repeat([0x5d], d), repeat([0x61], d - 1), [0x71, 0, 0x61], repeat([0x5d], d), [0x68, 0], repeat([0x61], d), [0x61]);
    assert.throws(() => unpickle(b, { file: 'shared.pkl' }), (e: unknown) => e instanceof PickleError && /nested deeper than 1000 levels/.test(e.message));
  });

  it('a list holding itself is a cycle, not an endless depth', () => {
    // EMPTY_LIST BINPUT 0 BINGET 0 APPEND
    const v = unpickle(pickle([0x5d, 0x71, 0, 0x68, 0, 0x61]), { file: 'x' }).value as unknown[];
    assert.equal(v[0], v);
  });
});

describe('tensor views are bounded by the storage actually present', () => {
  it('refuses a stride-0 view of 2^28 elements over a 4-element storage, at load time', async () => {
    const path = join(dir, 'broadcast.pt');
    const storage = Storage.fromBytes('0', 'float32', new Uint8Array(16));
    await saveTorch({ rollout_data: { log_probs: [new Tensor('float32', [2 ** 28], [0], 0, storage)] } }, path);
    assert.ok(statSync(path).size < 64 * 1024);
    await assert.rejects(openTorchFile(path), (e: unknown) => e instanceof PickleError && /view of 268435456 elements .* exceeds the broadcast limit/.test(e.message));
  });

  it('refuses such a view built in memory before the gather allocates', async () => {
    const t = new Tensor('float32', [2 ** 14, 2 ** 14], [0, 0], 0, Storage.fromBytes('0', 'float32', new Uint8Array(4)));
    await assert.rejects(readTensorNumbers(t), (e: unknown) => e instanceof TorchFormatError && /exceeds the broadcast limit/.test(e.message));
  });

  it('still reads a small broadcast (torch expand) and a view with an impossible size is refused', async () => {
    const path = join(dir, 'small.pt');
    const storage = Storage.fromBytes('0', 'int32', Uint8Array.from([7, 0, 0, 0]));
    await saveTorch({ x: new Tensor('int32', [3, 2], [0, 0], 0, storage) }, path);
    const f = await openTorchFile(path);
    const x = (f.value as { x: Tensor }).x;
    assert.deepEqual([...tensorDataFromBytes(x, await x.storage.bytes())], [7, 7, 7, 7, 7, 7]);
    await f.close();
    const huge = join(dir, 'huge.pt');
    await saveTorch({ x: new Tensor('int32', [2 ** 40, 2 ** 40], [0, 0], 0, storage) }, huge);
    await assert.rejects(openTorchFile(huge), /impossible element count|exceeds the broadcast limit/);
  });
});
