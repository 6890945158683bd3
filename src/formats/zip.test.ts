import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { fixturePath } from '../../test/support/fixtures.ts';
import { visitCentralDirectorySync, ZipArchive, ZipError } from './zip.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-zip-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const fixture = fixturePath('miles-demo', 'run', 'train_data', '1_2.pt');

interface BuildEntry {
  name: string;
  data: Uint8Array;
  method?: number;
  /** Put sizes and offset in a zip64 extra field (0xffffffff in the 32-bit slots). */
  zip64?: boolean;
  /** Zero sizes in the local header and a data descriptor after the data, as torch writes. */
  descriptor?: boolean;
}

/** A minimal zip writer for tests, able to force zip64 records. */
function buildZip(entries: BuildEntry[], opts: { eocd64?: boolean } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  let off = 0;
  const push = (b: Uint8Array): void => {
    parts.push(b);
    off += b.length;
  };
  const cds: Uint8Array[] = [];
  for (const e of entries) {
    const name = new TextEncoder().encode(e.name);
    const crc = crc32(e.data);
    const lh = new DataView(new ArrayBuffer(30 + name.length));
    lh.setUint32(0, 0x04034b50, true);
    lh.setUint16(6, e.descriptor ? 0x0808 : 0x0800, true);
    lh.setUint16(8, e.method ?? 0, true);
    lh.setUint32(14, e.descriptor ? 0 : crc, true);
    lh.setUint32(18, e.descriptor ? 0 : e.data.length, true);
    lh.setUint32(22, e.descriptor ? 0 : e.data.length, true);
    lh.setUint16(26, name.length, true);
    new Uint8Array(lh.buffer).set(name, 30);
    const at = off;
    push(new Uint8Array(lh.buffer));
    push(e.data);
    if (e.descriptor) {
      const dd = new DataView(new ArrayBuffer(16));
      dd.setUint32(0, 0x08074b50, true);
      dd.setUint32(4, crc, true);
      dd.setUint32(8, e.data.length, true);
      dd.setUint32(12, e.data.length, true);
      push(new Uint8Array(dd.buffer));
    }
    const extra = e.zip64 ? 28 : 0;
    const cd = new DataView(new ArrayBuffer(46 + name.length + extra));
    cd.setUint32(0, 0x02014b50, true);
    cd.setUint16(8, 0x0800 | (e.descriptor ? 8 : 0), true);
    cd.setUint16(10, e.method ?? 0, true);
    cd.setUint32(16, crc, true);
    cd.setUint32(20, e.zip64 ? 0xffffffff : e.data.length, true);
    cd.setUint32(24, e.zip64 ? 0xffffffff : e.data.length, true);
    cd.setUint16(28, name.length, true);
    cd.setUint16(30, extra, true);
    cd.setUint32(42, e.zip64 ? 0xffffffff : at, true);
    new Uint8Array(cd.buffer).set(name, 46);
    if (e.zip64) {
      const x = 46 + name.length;
      cd.setUint16(x, 1, true);
      cd.setUint16(x + 2, 24, true);
      cd.setBigUint64(x + 4, BigInt(e.data.length), true);
      cd.setBigUint64(x + 12, BigInt(e.data.length), true);
      cd.setBigUint64(x + 20, BigInt(at), true);
    }
    cds.push(new Uint8Array(cd.buffer));
  }
  const cdStart = off;
  for (const c of cds) push(c);
  const cdSize = off - cdStart;
  if (opts.eocd64) {
    const at64 = off;
    const r = new DataView(new ArrayBuffer(76));
    r.setUint32(0, 0x06064b50, true);
    r.setBigUint64(4, 44n, true);
    r.setBigUint64(24, BigInt(entries.length), true);
    r.setBigUint64(32, BigInt(entries.length), true);
    r.setBigUint64(40, BigInt(cdSize), true);
    r.setBigUint64(48, BigInt(cdStart), true);
    r.setUint32(56, 0x07064b50, true);
    r.setBigUint64(64, BigInt(at64), true);
    r.setUint32(72, 1, true);
    push(new Uint8Array(r.buffer));
  }
  const eocd = new DataView(new ArrayBuffer(22));
  eocd.setUint32(0, 0x06054b50, true);
  eocd.setUint16(8, opts.eocd64 ? 0xffff : entries.length, true);
  eocd.setUint16(10, opts.eocd64 ? 0xffff : entries.length, true);
  eocd.setUint32(12, opts.eocd64 ? 0xffffffff : cdSize, true);
  eocd.setUint32(16, opts.eocd64 ? 0xffffffff : cdStart, true);
  push(new Uint8Array(eocd.buffer));
  return Buffer.concat(parts);
}

function writeTemp(name: string, bytes: Uint8Array): string {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('ZipArchive', () => {
  it('reads torch archives whose local headers carry zero sizes (data descriptors)', async () => {
    const raw = readFileSync(fixture);
    assert.equal(raw.readUInt16LE(6) & 0x08, 0x08, 'the fixture uses a data descriptor');
    assert.equal(raw.readUInt32LE(22), 0, 'and a zero size in its first local header');
    for (const wholeFileBelow of [0, undefined]) {
    const z = await ZipArchive.open(fixture, { wholeFileBelow });
    try {
      assert.equal(z.entries[0].name, '1_2/data.pkl');
      assert.equal(z.entries[0].size, 11318);
      const pkl = await z.read(z.entries[0]);
      assert.equal(pkl.length, 11318);
      assert.deepEqual([pkl[0], pkl[1], pkl[pkl.length - 1]], [0x80, 2, 0x2e]);
      assert.equal(crc32(pkl), z.entries[0].crc32);
      const part = await z.readRange('1_2/data.pkl', 2, 3);
      assert.deepEqual([...part], [...pkl.subarray(2, 5)]);
      assert.equal((await z.read('1_2/data/0')).byteOffset % 64, 0, 'storage bytes keep their 64-byte phase');
      for (const e of z.entries) assert.equal(crc32(await z.read(e)), e.crc32, e.name);
    } finally {
      await z.close();
    }
    }
  });

  it('openSync and loadSync: entries read into memory are served without touching the file', async () => {
    const p = join(dir, 'load-sync.pt');
    writeFileSync(p, readFileSync(fixture));
    const z = ZipArchive.openSync(p, { wholeFileBelow: 0 });
    assert.equal(z.isOpen, false);
    assert.equal(z.inMemory, false);
    const storages = z.entries.filter((e) => /\/data\/\d+$/.test(e.name));
    assert.ok(storages.length >= 4);
    const chosen = [storages[0], storages[2], storages[storages.length - 1]];
    let asked = 0;
    const memory = new Uint8Array(1 << 20);
    z.loadSync(chosen, { memory: (size) => ((asked = size), memory), maxGap: 0 });
    assert.ok(asked > 0 && asked <= memory.length && z.inMemory);
    rmSync(p); // every later read of a loaded entry must come from memory
    for (const e of chosen) {
      const b = await z.read(e);
      assert.equal(crc32(b), e.crc32, e.name);
      assert.equal(b.buffer, memory.buffer, 'a view of the memory supplied');
      assert.equal(b.byteOffset % 64, 0, 'storage bytes keep their 64-byte phase');
    }
    await assert.rejects(z.read(storages[1]), (e: unknown) => e instanceof ZipError && /cannot reopen/.test((e as Error).message));
    z.releaseBytes();
    assert.equal(z.inMemory, false);
    await assert.rejects(z.read(chosen[0]), ZipError);
  });

  it('loadSync refuses a file that changed size since it was opened', () => {
    const p = join(dir, 'load-sync-changed.pt');
    writeFileSync(p, readFileSync(fixture));
    const z = ZipArchive.openSync(p, { wholeFileBelow: 0 });
    writeFileSync(p, readFileSync(fixture).subarray(0, 1000));
    assert.throws(() => z.loadSync(z.entries), (e: unknown) => e instanceof ZipError && /file changed/.test((e as Error).message));
  });

  it('small archives are read whole at open and hold no handle', async () => {
    const z = await ZipArchive.open(fixture);
    assert.equal(z.isOpen, false);
    assert.equal((await z.read('1_2/data.pkl')).length, 11318);
  });

  it('any root name, data descriptors, and reads after close reopen the file', async () => {
    const p = writeTemp('roots.zip', buildZip([
      { name: 'ünïcode root/data.pkl', data: text('hello'), descriptor: true },
      { name: 'ünïcode root/data/0', data: text('world!') },
    ]));
    const z = await ZipArchive.open(p, { wholeFileBelow: 0 });
    assert.deepEqual(z.entries.map((e) => e.name), ['ünïcode root/data.pkl', 'ünïcode root/data/0']);
    assert.equal(z.isOpen, true);
    await z.close();
    assert.equal(z.isOpen, false);
    assert.equal(new TextDecoder().decode(await z.read('ünïcode root/data/0')), 'world!');
    assert.equal(new TextDecoder().decode(await z.read('ünïcode root/data.pkl')), 'hello');
  });

  it('zip64: extra fields and the end-of-central-directory-64 record', async () => {
    const p = writeTemp('z64.zip', buildZip([
      { name: 'a/data.pkl', data: text('abc'), zip64: true },
      { name: 'a/data/0', data: new Uint8Array(1000).fill(7), zip64: true, descriptor: true },
    ], { eocd64: true }));
    const z = await ZipArchive.open(p);
    try {
      assert.deepEqual(z.entries.map((e) => [e.name, e.size]), [['a/data.pkl', 3], ['a/data/0', 1000]]);
      assert.equal(new TextDecoder().decode(await z.read('a/data.pkl')), 'abc');
      assert.ok((await z.read('a/data/0')).every((b) => b === 7), 'data/0 bytes');
    } finally {
      await z.close();
    }
  });

  it('an entry past 4 GiB in a sparse file (real zip64 offsets and sizes)', async () => {
    const p = join(dir, 'huge.zip');
    const name = text('h/data/0');
    const size = 2 ** 32 + 4096;
    const fd = openSync(p, 'w');
    try {
      const lh = Buffer.alloc(30 + name.length);
      lh.writeUInt32LE(0x04034b50, 0);
      lh.writeUInt16LE(0x0808, 6);
      lh.writeUInt16LE(name.length, 26);
      lh.set(name, 30);
      writeSync(fd, lh, 0, lh.length, 0);
      const dataStart = lh.length;
      writeSync(fd, text('TAIL'), 0, 4, dataStart + size - 4);
      const cdStart = dataStart + size;
      const cd = Buffer.alloc(46 + name.length + 20);
      cd.writeUInt32LE(0x02014b50, 0);
      cd.writeUInt32LE(0xffffffff, 20);
      cd.writeUInt32LE(0xffffffff, 24);
      cd.writeUInt16LE(name.length, 28);
      cd.writeUInt16LE(20, 30);
      cd.writeUInt32LE(0, 42);
      cd.set(name, 46);
      cd.writeUInt16LE(1, 46 + name.length);
      cd.writeUInt16LE(16, 48 + name.length);
      cd.writeBigUInt64LE(BigInt(size), 50 + name.length);
      cd.writeBigUInt64LE(BigInt(size), 58 + name.length);
      writeSync(fd, cd, 0, cd.length, cdStart);
      const tail = Buffer.alloc(56 + 20 + 22);
      tail.writeUInt32LE(0x06064b50, 0);
      tail.writeBigUInt64LE(44n, 4);
      tail.writeBigUInt64LE(1n, 24);
      tail.writeBigUInt64LE(1n, 32);
      tail.writeBigUInt64LE(BigInt(cd.length), 40);
      tail.writeBigUInt64LE(BigInt(cdStart), 48);
      tail.writeUInt32LE(0x07064b50, 56);
      tail.writeBigUInt64LE(BigInt(cdStart + cd.length), 64);
      tail.writeUInt32LE(1, 72);
      tail.writeUInt32LE(0x06054b50, 76);
      tail.writeUInt16LE(0xffff, 84);
      tail.writeUInt16LE(0xffff, 86);
      tail.writeUInt32LE(0xffffffff, 88);
      tail.writeUInt32LE(0xffffffff, 92);
      writeSync(fd, tail, 0, tail.length, cdStart + cd.length);
    } finally {
      closeSync(fd);
    }
    assert.ok(statSync(p).size > 2 ** 32, 'the file is past 4 GiB');
    const z = await ZipArchive.open(p);
    try {
      assert.equal(z.entries[0].size, size);
      assert.equal(new TextDecoder().decode(await z.readRange('h/data/0', size - 4, 4)), 'TAIL');
      assert.equal(await z.dataStart(z.entries[0]), 30 + name.length);
      await assert.rejects(z.read('h/data/0'), (e: unknown) => e instanceof ZipError && /too large to read at once/.test(e.message));
    } finally {
      await z.close();
      rmSync(p);
    }
  });
});

describe('bad zips give a ZipError naming the file and the problem', () => {
  const expectZipError = async (p: string, re: RegExp): Promise<void> => {
    await assert.rejects(ZipArchive.open(p), (e: unknown) => {
      assert.ok(e instanceof ZipError, String(e));
      assert.ok(e.message.startsWith(p), e.message);
      assert.match(e.message, re);
      return true;
    });
  };
  it('not a zip', async () => {
    await expectZipError(writeTemp('text.pt', text('just some text, certainly longer than twenty-two bytes')), /not a zip archive/);
    await expectZipError(writeTemp('empty.pt', new Uint8Array(0)), /not a zip archive/);
    await expectZipError(join(dir, 'missing.pt'), /cannot open/);
  });
  it('truncated archive', async () => {
    const raw = readFileSync(fixture);
    await expectZipError(writeTemp('cut.pt', raw.subarray(0, raw.length - 30)), /truncated archive/);
    await expectZipError(writeTemp('cut2.pt', raw.subarray(0, 5000)), /truncated archive/);
  });
  it('impossible sizes and offsets', async () => {
    const z = buildZip([{ name: 'a/data.pkl', data: text('abc') }]);
    const cdAt = z.length - 22 - (46 + 10);
    const big = Buffer.from(z);
    big.writeUInt32LE(1_000_000, cdAt + 24);
    big.writeUInt32LE(1_000_000, cdAt + 20);
    await expectZipError(writeTemp('big.zip', big), /impossible offset\/size/);
    const eocd = Buffer.from(z);
    eocd.writeUInt16LE(60000, z.length - 22 + 10);
    await expectZipError(writeTemp('count.zip', eocd), /impossible entry count/);
    const off = Buffer.from(z);
    off.writeUInt32LE(999_999, z.length - 22 + 16);
    await expectZipError(writeTemp('cdoff.zip', off), /central directory/);
  });
  it('compressed entries are refused clearly', async () => {
    const z = await ZipArchive.open(writeTemp('deflate.zip', buildZip([{ name: 'a/data.pkl', data: text('xyz'), method: 8 }])));
    try {
      await assert.rejects(z.read('a/data.pkl'), /deflate\.zip: entry a\/data\.pkl is compressed \(method 8\)/);
      await assert.rejects(z.read('a/nope'), /no entry named a\/nope/);
    } finally {
      await z.close();
    }
  });
});

describe('property: damaged zips end in a ZipError or a readable archive', () => {
  const raw = readFileSync(fixture);
  const probe = async (bytes: Uint8Array, i: number): Promise<void> => {
    const p = writeTemp(`prop-${i % 8}.zip`, bytes);
    try {
      const z = await ZipArchive.open(p, { wholeFileBelow: i % 2 ? 0 : undefined });
      try {
        for (const e of z.entries.slice(0, 4)) await z.read(e).catch((err) => {
          if (!(err instanceof ZipError)) throw err;
        });
      } finally {
        await z.close();
      }
    } catch (err) {
      if (!(err instanceof ZipError)) throw err;
    }
    // The blocking path parses the same way and fails the same way.
    try {
      const z = ZipArchive.openSync(p, { wholeFileBelow: i % 2 ? 0 : undefined });
      try {
        z.loadSync(z.entries.slice(0, 4));
      } catch (err) {
        if (!(err instanceof ZipError)) throw err;
      }
    } catch (err) {
      if (!(err instanceof ZipError)) throw err;
    }
  };
  it('random bytes', { timeout: 120_000 }, async () => {
    let i = 0;
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), (b) => probe(b, i++)), { numRuns: 200 });
  });
  it('truncated and mutated torch archives', { timeout: 120_000 }, async () => {
    let i = 0;
    await fc.assert(
      fc.asyncProperty(fc.double({ min: 0, max: 1, noNaN: true }), fc.array(fc.tuple(fc.double({ min: 0.8, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }), async (cut, muts) => {
        const b = Buffer.from(raw.subarray(0, Math.max(1, Math.floor(raw.length * (0.5 + cut / 2)))));
        for (const [f, v] of muts) b[Math.floor(f * (b.length - 1))] = v;
        await probe(b, i++);
      }),
      { numRuns: 200 },
    );
  });
});

describe('visitCentralDirectorySync', () => {
  /** What the visit saw, or null when it declined; asserts that whatever it saw is what openSync lists. */
  const visited = (p: string): [string, number, number][] | null => {
    const seen: [string, number, number][] = [];
    // Names as latin1 text: what openSync makes of a name not flagged UTF-8 (every name here but mutated ones).
    const ok = visitCentralDirectorySync(p, { bytes: new Uint8Array(16) }, (bytes, start, end, size, crc) => seen.push([Buffer.from(bytes.subarray(start, end)).toString('latin1'), size, crc]));
    if (!ok) return null;
    const z = ZipArchive.openSync(p, { wholeFileBelow: 0 });
    const ascii = (s: string): boolean => !/[^\x00-\x7f]/.test(s);
    assert.deepEqual(
      seen.map(([n, size, crc]) => [ascii(n) ? n : '', size, crc]),
      z.entries.map((e) => [ascii(e.name) ? e.name : '', e.size, e.crc32]),
    );
    return seen;
  };

  it('lists a torch archive as openSync does, a directory longer than its first read included', () => {
    assert.ok(visited(fixture)!.length > 5);
    const many = Array.from({ length: 400 }, (_, i) => ({ name: `archive/data/${i}`, data: text(`value ${i}`) }));
    assert.equal(visited(writeTemp('many.zip', buildZip(many)))!.length, 400);
    // zip64 end records (torch writes them) are read from the tail too.
    assert.equal(visited(writeTemp('e64.zip', buildZip(many, { eocd64: true })))!.length, 400);
  });

  it('declines what it leaves to openSync: zip64 entry sizes, a trailing comment, damage', () => {
    assert.equal(visited(writeTemp('z64.zip', buildZip([{ name: 'a/data/0', data: text('x'), zip64: true }]))), null);
    const commented = Buffer.from(buildZip([{ name: 'a/data/0', data: text('x') }]));
    commented.writeUInt16LE(3, commented.length - 2);
    assert.equal(visited(writeTemp('comment.zip', Buffer.concat([commented, text('abc')]))), null);
    assert.equal(visited(writeTemp('short.zip', readFileSync(fixture).subarray(0, 1000))), null);
    assert.equal(visited(join(dir, 'missing.zip')), null);
  });

  it('property: on truncated and mutated torch archives it lists what openSync lists, or declines', { timeout: 120_000 }, () => {
    const raw = readFileSync(fixture);
    let i = 0;
    let listed = 0;
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.array(fc.tuple(fc.double({ min: 0.9, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }), (cut, muts) => {
        const b = Buffer.from(raw.subarray(0, cut < 0.5 ? raw.length : Math.max(1, Math.floor(raw.length * cut))));
        for (const [f, v] of muts) b[Math.floor(f * (b.length - 1))] = v;
        if (visited(writeTemp(`visit-${i++ % 4}.zip`, b)) !== null) listed++;
      }),
      { numRuns: 300 },
    );
    assert.ok(listed > 20, `${listed} archives listed`);
  });
});
