// Readers never open a FIFO, device or directory as a file, and symlinks are resolved before a folder check.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { confinedPath, confinedPathSync, FileRefused, openRegular, openRegularSync, openRegularSyncSized, readGainedSync, readRegularFile, readRegularFileSync } from './fileAccess.ts';
import { readCompleteLines, readRange } from './jsonlTail.ts';
import { ParquetFile } from './parquet.ts';
import { ZipArchive } from './zip.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-access-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const fifo = join(dir, 'pipe');
execFileSync('mkfifo', [fifo]);
mkdirSync(join(dir, 'sub'));
writeFileSync(join(dir, 'plain.txt'), 'a\nb\n');

const refused = (kind: RegExp) => (e: unknown) => e instanceof FileRefused && e.code === 'ENOTREG' && kind.test(e.message);

describe('non-regular files are refused before anything blocks on them', () => {
  test('the openers', async () => {
    // A blocking open of a FIFO with no writer would never return: each of these answering proves none opened it so.
    await assert.rejects(openRegular(fifo), refused(/a FIFO, not a regular file/));
    assert.throws(() => openRegularSync(fifo), refused(/a FIFO/));
    await assert.rejects(readRegularFile(fifo), refused(/a FIFO/));
    assert.throws(() => readRegularFileSync(fifo), refused(/a FIFO/));
    await assert.rejects(openRegular(join(dir, 'sub')), refused(/a directory/));
    assert.throws(() => openRegularSync('/dev/null'), refused(/a character device/));
    await assert.rejects(openRegular(join(dir, 'missing')), { code: 'ENOENT' });
    assert.equal((await readRegularFile(join(dir, 'plain.txt'))).toString(), 'a\nb\n');
    // A file a listing named regular that is a FIFO by the time it opens: the open does not wait for a
    // writer, and what it opened is refused.
    assert.throws(() => openRegularSyncSized(fifo, true), refused(/a FIFO/));
    const opened = openRegularSyncSized(join(dir, 'plain.txt'), true);
    closeSync(opened.fd);
    assert.equal(opened.size, 4);
  });

  test('the format readers', async () => {
    await assert.rejects(ZipArchive.open(fifo), refused(/a FIFO/));
    assert.throws(() => ZipArchive.openSync(fifo), refused(/a FIFO/));
    await assert.rejects(ParquetFile.open(fifo, 'x.parquet'), refused(/a FIFO/));
    assert.throws(() => readCompleteLines(fifo, 0, () => {}), refused(/a FIFO/));
    assert.equal(readRange(fifo, 0, 10).length, 0);
    // a growing file's new bytes: none from a FIFO (never blocked on), a missing file or a directory
    assert.equal(readGainedSync(fifo, 0), null);
    assert.equal(readGainedSync(join(dir, 'missing'), 0), null);
    assert.equal(readGainedSync(join(dir, 'sub'), 0), null);
    assert.equal(readGainedSync(join(dir, 'plain.txt'), 2)!.toString(), 'b\n');
    assert.equal(readGainedSync(join(dir, 'plain.txt'), 4)!.length, 0);
    assert.deepEqual(readCompleteLines(join(dir, 'missing'), 0, () => {}), { offset: 0, size: 0, bytes: 0 });
  });
});

describe('confinement after resolving symlinks', () => {
  test('a link out of the folder is refused, a link within it is followed, a loop is ELOOP', async () => {
    const root = join(dir, 'root');
    mkdirSync(root);
    writeFileSync(join(root, 'in.txt'), 'x');
    symlinkSync(join(dir, 'plain.txt'), join(root, 'out.txt'));
    symlinkSync('in.txt', join(root, 'alias.txt'));
    symlinkSync('loop2', join(root, 'loop1'));
    symlinkSync('loop1', join(root, 'loop2'));
    await assert.rejects(confinedPath(root, join(root, 'out.txt'), 'out.txt'), (e: unknown) => e instanceof FileRefused && e.code === 'EOUTSIDE' && /^out\.txt: a symlink resolving outside/.test(e.message));
    assert.throws(() => confinedPathSync(root, join(root, 'out.txt')), { code: 'EOUTSIDE' });
    assert.equal(await confinedPath(root, join(root, 'alias.txt')), join(root, 'in.txt'));
    await assert.rejects(confinedPath(root, join(root, 'loop1')), { code: 'ELOOP' });
    // a sibling folder whose name starts like the root's is outside it
    mkdirSync(join(dir, 'root-other'));
    writeFileSync(join(dir, 'root-other', 'f'), '');
    symlinkSync(join(dir, 'root-other', 'f'), join(root, 'sibling'));
    await assert.rejects(confinedPath(root, join(root, 'sibling')), { code: 'EOUTSIDE' });
  });
});
