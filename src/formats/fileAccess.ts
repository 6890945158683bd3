// How every reader opens a file of a run: only regular files (a FIFO, device or socket is refused before it
// is opened, so nothing ever blocks on one), and only inside the folder it belongs to once symlinks resolve.
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { threadId } from 'node:worker_threads';

/** A path that exists but is not read: not a regular file, or a symlink resolving outside its folder. */
export class FileRefused extends Error {
  override readonly name = 'FileRefused';
  /** `ENOTREG` (FIFO, device, socket, directory) or `EOUTSIDE` (resolves outside the folder). */
  readonly code: 'ENOTREG' | 'EOUTSIDE';
  constructor(
    readonly file: string,
    readonly problem: string,
    code: 'ENOTREG' | 'EOUTSIDE' = 'ENOTREG',
  ) {
    super(`${file}: ${problem}`);
    this.code = code;
  }
}

/** What kind of non-regular file `st` is, in words. */
export function fileKind(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

// O_NONBLOCK: should a FIFO take the place of the file between the check and the open, the open returns
// at once instead of waiting for a writer (and the fstat below refuses it).
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

function refuseKind(path: string, st: Stats): void {
  if (!st.isFile()) throw new FileRefused(path, `${fileKind(st)}, not a regular file: skipped`);
}

/** Opens a regular file for reading; anything else is a FileRefused (missing files keep their ENOENT). */
export async function openRegular(path: string): Promise<FileHandle> {
  refuseKind(path, await stat(path));
  const fh = await open(path, READ_FLAGS);
  try {
    refuseKind(path, await fh.stat());
    return fh;
  } catch (e) {
    await fh.close().catch(() => {});
    throw e;
  }
}

/** The blocking twin of `openRegular`: a file descriptor the caller closes. */
export function openRegularSync(path: string): number {
  return openRegularSyncSized(path).fd;
}

/**
 * `openRegularSync` with the size and `fstat` of the file opened. `listedRegular`: the caller's directory
 * listing already named it a regular file, so its kind is not asked again before the open (the open never
 * blocks, and what it opened is checked all the same).
 */
export function openRegularSyncSized(path: string, listedRegular = false): { fd: number; size: number; stat: Stats } {
  if (!listedRegular) refuseKind(path, statSync(path));
  const fd = openSync(path, READ_FLAGS);
  try {
    const st = fstatSync(fd);
    refuseKind(path, st);
    return { fd, size: st.size, stat: st };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Reads a whole regular file (see `openRegular`). */
export async function readRegularFile(path: string): Promise<Buffer> {
  const fh = await openRegular(path);
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/**
 * A file as persisted caches name their source: inode, size, modification and creation time (a rewritten,
 * replaced, grown or shortened file, or a new file on a reused inode, has another).
 */
export function fileIdentity(st: Stats): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}:${st.birthtimeMs}`;
}

/** Temp files named so far by this thread (see `tempPathBeside`). */
let tempsNamed = 0;

/**
 * A temp file's path beside `path`, to be renamed over it: unique to this process, thread and write, so two
 * writers of the same file (two servers of one run, a parse thread and the serving thread) never share one.
 */
export function tempPathBeside(path: string): string {
  return `${path}.${process.pid}-${threadId}-${tempsNamed++}.tmp`;
}

/**
 * The real path of `path`, which may not exist yet: its nearest existing ancestor with links resolved, the
 * rest appended (what `path` will be once made).
 */
export function realpathOfFuture(path: string): string {
  const rest: string[] = [];
  let p = path;
  for (;;) {
    try {
      return join(realpathSync(p), ...rest.reverse());
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const parent = dirname(p);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || parent === p) throw e;
      rest.push(basename(p));
      p = parent;
    }
  }
}

/** Whether `real` (a resolved path) is `root` or lies below it (`root` resolved too). */
export function isInside(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * `path` after resolving every symlink, refused when that leaves `root` (itself resolved by the caller):
 * a link inside a run may not make the server read, or write next to, a file elsewhere.
 */
export async function confinedPath(root: string, path: string, shown = path): Promise<string> {
  const real = await realpath(path);
  if (!isInside(root, real)) throw new FileRefused(shown, 'a symlink resolving outside its folder: skipped', 'EOUTSIDE');
  return real;
}

export function confinedPathSync(root: string, path: string, shown = path): string {
  const real = realpathSync(path);
  if (!isInside(root, real)) throw new FileRefused(shown, 'a symlink resolving outside its folder: skipped', 'EOUTSIDE');
  return real;
}

/** The blocking twin of `readRegularFile`. */
export function readRegularFileSync(path: string): Buffer {
  const fd = openRegularSync(path);
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * What a growing file holds past `offset` (empty when nothing), read up to its size when asked; null when it cannot
 * be opened (not there yet, gone, or not a regular file).
 */
export function readGainedSync(path: string, offset: number): Buffer | null {
  let fd: number;
  try {
    // a FIFO or device named like the file would block the read: only a regular file is read
    fd = openRegularSync(path);
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return Buffer.alloc(0);
    const buf = Buffer.allocUnsafe(size - offset);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** `text` with the absolute directories `roots` taken off the paths it names inside them (a root itself is `.`). */
export function relativeToRoots(text: string, roots: readonly string[]): string {
  let out = text;
  for (const root of [...roots].filter(Boolean).sort((a, b) => b.length - a.length)) out = out.split(`${root}/`).join('').split(root).join('.');
  return out;
}
