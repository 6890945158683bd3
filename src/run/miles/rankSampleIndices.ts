// A rank file's `sample_indices` read straight from its pickle's bytes, without decoding the pickle: a token
// read learns which of a step's candidate rank files hold its sample for a small part of a decode each. Only
// the plain form torch.save writes for a list of small ints is read; anything else answers null (the caller
// decodes the file).
import { findDataPkl } from '../../formats/torch/load.ts';
import { ZipArchive } from '../../formats/zip.ts';

const KEY = Buffer.from('sample_indices', 'latin1');
// Pickle opcodes.
const BINUNICODE = 0x58;
const SHORT_BINUNICODE = 0x8c;
const BINPUT = 0x71;
const LONG_BINPUT = 0x72;
const MEMOIZE = 0x94;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;
const EMPTY_LIST = 0x5d;
const MARK = 0x28;
const APPENDS = 0x65;
const APPEND = 0x61;
const BININT1 = 0x4b;
const BININT2 = 0x4d;
const BININT = 0x4a;
/** What may follow a dict value: the next key (BINUNICODE, SHORT_BINUNICODE, BINGET, LONG_BINGET) or SETITEMS/SETITEM. */
const AFTER_VALUE = new Set([BINUNICODE, SHORT_BINUNICODE, 0x68, 0x6a, 0x75, 0x73]);

/**
 * The list under the pickle's one `sample_indices` key, when the key's text occurs exactly once in the whole
 * pickle and its value is a list of BININT1/BININT2/BININT values (in MARK … APPENDS batches or single
 * APPENDs); null for any other form.
 */
export function sampleIndicesInPickle(bytes: Uint8Array): number[] | null {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const k = b.indexOf(KEY);
  if (k < 0 || b.indexOf(KEY, k + 1) >= 0) return null;
  const long = k >= 5 && b[k - 5] === BINUNICODE && b.readUInt32LE(k - 4) === KEY.length;
  const short = k >= 2 && b[k - 2] === SHORT_BINUNICODE && b[k - 1] === KEY.length;
  if (!long && !short) return null;
  let p = k + KEY.length;
  // The key's text is written once, but a second dict holding the same key refers back to its memo slot: a
  // key kept by MEMOIZE (its slot not named here) or whose slot is fetched again anywhere may stand for another list.
  if (b[p] === MEMOIZE) return null;
  if (b[p] === BINPUT && b.indexOf(Buffer.from([BINGET, b[p + 1]!]), p + 2) >= 0) return null;
  if (b[p] === LONG_BINPUT && b.indexOf(Buffer.from([LONG_BINGET, ...b.subarray(p + 1, p + 5)]), p + 5) >= 0) return null;
  const memo = (): void => {
    if (b[p] === BINPUT) p += 2;
    else if (b[p] === LONG_BINPUT) p += 5;
    else if (b[p] === MEMOIZE) p += 1;
  };
  /** The int at `p` (advancing past it), or null, `p` unmoved, when there is none there. */
  const int = (): number | null => {
    const op = b[p];
    if (op === BININT1 && p + 2 <= b.length) return (p += 2), b[p - 1];
    if (op === BININT2 && p + 3 <= b.length) return (p += 3), b.readUInt16LE(p - 2);
    if (op === BININT && p + 5 <= b.length) return (p += 5), b.readInt32LE(p - 4);
    return null;
  };
  memo();
  if (b[p++] !== EMPTY_LIST) return null;
  memo();
  const out: number[] = [];
  for (;;) {
    if (p >= b.length) return null;
    if (b[p] === MARK) {
      p++;
      for (let v = int(); v !== null; v = int()) out.push(v);
      if (b[p++] !== APPENDS) return null;
      continue;
    }
    const at = p;
    const v = int();
    if (v !== null && b[p] === APPEND) {
      p++;
      out.push(v);
      continue;
    }
    // The list ends where the dict goes on: its next key, or the end of its batch of items.
    return AFTER_VALUE.has(b[at]) ? out : null;
  }
}

/** `sampleIndicesInPickle` of a rank file's `data.pkl` (null also when the file is not read that simply). */
export async function sampleIndicesOf(path: string): Promise<number[] | null> {
  try {
    return await sampleIndicesInArchive(ZipArchive.openSync(path, { wholeFileBelow: 0 }));
  } catch {
    return null;
  }
}

/**
 * `sampleIndicesInPickle` of an open rank archive's `data.pkl`, read into `memory` when given (see
 * ZipArchive.loadSync); null also when it cannot be read that simply. The bytes are released after.
 */
export async function sampleIndicesInArchive(archive: ZipArchive, memory?: (size: number) => Uint8Array): Promise<number[] | null> {
  try {
    const pkl = findDataPkl(archive.entries);
    if (!pkl || pkl.method !== 0) return null;
    archive.loadSync([pkl], { memory });
    return sampleIndicesInPickle(await archive.read(pkl));
  } catch {
    return null;
  } finally {
    archive.releaseBytes();
  }
}
