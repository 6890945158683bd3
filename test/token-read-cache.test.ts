// What a token read keeps in the cache directory for the next process: the train step catalog (which rank
// files are byte-identical copies, their storage sizes, the samples of each file decoded so far) and the
// texts of the tokens decoded. A later reader uses them instead of reading every rank file's directory or
// loading the tokenizer, a changed rank or tokenizer file is not trusted, and the answers are the goldens'
// byte for byte with or without them.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { tokenView } from '../src/queries/tokens.ts';
import { DumpReader } from '../src/run/miles/reader.ts';
import { foreground } from '../src/run/foreground.ts';
import { ageTree, copyFixtureRun, diffJson, fixturePath, loadGoldens } from './support/fixtures.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-token-cache-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const cacheDir = (): string => join(scratch, `cache-${dirs++}`);

/** The train tokens goldens: request parts and the expected body. */
const goldens = loadGoldens()
  .filter((g) => g.status === 200 && /^\/api\/rollout\/\d+\/sample\/\d+\/tokens/.test(g.request) && !g.request.includes('eval'))
  .map((g) => {
    const url = new URL(g.request, 'http://x');
    const [, , , id, , idx] = url.pathname.split('/');
    const start = Number(url.searchParams.get('start') ?? 0);
    const end = url.searchParams.has('end') ? Number(url.searchParams.get('end')) : null;
    return { file: g.file, id: Number(id), idx: Number(idx), start, end, body: g.body };
  });

async function answer(reader: DumpReader, g: (typeof goldens)[number]): Promise<string> {
  return JSON.stringify(tokenView(await reader.sampleTokens(g.id, g.idx), { start: g.start, end: g.end }));
}

/** A fresh reader (as a new process would have) over `run`, answering `g`; waits for its cache writes. */
async function answerFresh(run: string, g: (typeof goldens)[number], cache?: string, decoded: string[] = []): Promise<string> {
  const reader = await DumpReader.open(run, { cacheDir: cache, onDecode: (f) => void decoded.push(f) });
  try {
    const text = await answer(reader, g);
    await reader.cacheWritten();
    return text;
  } finally {
    await reader.close();
  }
}

interface KeptCatalog {
  files: [string, string][];
  twinOf: number[];
  samples: [number, number[]][];
}

const catalogOf = (cache: string, id: number): KeptCatalog => JSON.parse(readFileSync(join(cache, `train_${id}.catalog.json`), 'utf8'));

/** Overwrites a file in place with other bytes of the same size, keeping its inode and times. */
function garble(path: string): void {
  const st = statSync(path);
  writeFileSync(path, Buffer.alloc(st.size, 0x5a));
  utimesSync(path, st.atime, st.mtime);
}

describe('what token reads keep in the cache directory', () => {
  it('answers every train tokens golden exactly as a reader without a cache directory, the catalog written then read', async () => {
    assert.ok(goldens.length > 20, `${goldens.length} goldens`);
    const run = fixturePath('miles-demo', 'run');
    const cache = cacheDir();
    const reused = new Set<number>();
    for (const g of goldens) {
      const plain = await answerFresh(run, g);
      const d = diffJson(JSON.parse(plain), g.body);
      assert.equal(d, null, `${g.file}: ${d}`);
      if (existsSync(join(cache, `train_${g.id}.catalog.json`))) reused.add(g.id);
      assert.equal(await answerFresh(run, g, cache), plain, g.file);
    }
    // Every step's catalog (and its mirror's layout) was written by its first read and read by the later ones.
    assert.deepEqual([...reused].sort(), [0, 1, 2]);
    for (const id of [0, 1, 2]) assert.ok(existsSync(join(cache, `rollout_${id}.mirror.json`)), `step ${id}`);
    for (const id of [0, 1, 2]) {
      const kept = catalogOf(cache, id);
      assert.equal(kept.files.length, 4);
      assert.ok(kept.samples.length > 0, `step ${id}: the decoded files' samples are kept`);
    }
  });

  it('decodes, of the rank files that may hold a sample, only those whose pickle lists it (the others\' indices are read from their bytes)', async () => {
    let skipped = 0;
    for (const g of goldens) {
      const cache = cacheDir();
      const decoded: string[] = [];
      await answerFresh(fixturePath('miles-demo', 'run'), g, cache, decoded);
      const kept = catalogOf(cache, g.id);
      const holds = (name: string) => kept.samples.some(([i, samples]) => kept.files[i][0] === name && samples.includes(g.idx));
      assert.deepEqual(decoded.filter((f) => !holds(f)), [], `${g.file}: decoded only files holding sample ${g.idx}`);
      skipped += kept.samples.filter(([i]) => !decoded.includes(kept.files[i][0])).length;
    }
    assert.ok(skipped > 0, 'some rank files were known without a decode');
  });

  it('is used by a later reader, which reads no directory of a file without the sample; a changed file makes it scan again', async () => {
    const copy = copyFixtureRun();
    try {
      const cache = cacheDir();
      const g = goldens.find((x) => x.id === 0)!;
      const expected = await answerFresh(copy.dir, g, cache);
      const kept = catalogOf(cache, 0);
      // A set of byte-identical rank files that does not hold the sample, known from its decode.
      const other = kept.samples.find(([, samples]) => !samples.includes(g.idx));
      assert.ok(other, 'the first read decoded a rank file without the sample');
      const garbled = kept.files.filter((_, i) => kept.twinOf[i] === other[0]).map(([name]) => name);
      for (const name of garbled) garble(join(copy.dir, name));

      // Same inode, size and times: the catalog still describes them, so they are never opened.
      const decoded: string[] = [];
      assert.equal(await answerFresh(copy.dir, g, cache, decoded), expected);
      assert.ok(decoded.length > 0 && decoded.every((f) => !garbled.includes(f)), `decoded ${decoded}`);
      // Without the catalog the same read scans every rank file and meets the damage: the tokens come without
      // their train side.
      const withoutTrain = await answerFresh(copy.dir, g, cacheDir());
      assert.notEqual(withoutTrain, expected);
      assert.deepEqual(JSON.parse(withoutTrain).token_ids, JSON.parse(expected).token_ids);

      // A rank file with a new modification time is not the one described: the reader scans again.
      const later = Date.now() / 1000 - 3600;
      utimesSync(join(copy.dir, garbled[0]), later, later);
      assert.equal(await answerFresh(copy.dir, g, cache), withoutTrain);
      // Its bytes restored, the scan succeeds and the catalog is written for the files as they are now.
      for (const name of garbled) {
        copyFileSync(fixturePath('miles-demo', 'run', name), join(copy.dir, name));
        utimesSync(join(copy.dir, name), later, later);
      }
      assert.equal(await answerFresh(copy.dir, g, cache), expected);
      const rewritten = catalogOf(cache, 0);
      const k = rewritten.files.findIndex(([name]) => name === garbled[0]);
      assert.notEqual(rewritten.files[k][1], kept.files[k][1]);
      const decodedAgain: string[] = [];
      assert.equal(await answerFresh(copy.dir, g, cache, decodedAgain), expected);
      assert.ok(decodedAgain.every((f) => !garbled.includes(f)), `decoded ${decodedAgain}`);
    } finally {
      copy.dispose();
    }
  });

  it('keeps token texts: a later reader answers without loading the tokenizer while it knows every id, and not for a changed tokenizer', async () => {
    const copy = copyFixtureRun();
    try {
      const cache = cacheDir();
      const [g, other] = [goldens.find((x) => x.id === 2)!, goldens.find((x) => x.id === 0)!];
      const expected = await answerFresh(copy.dir, g, cache);
      assert.ok(JSON.parse(expected).token_text.length > 0);
      const kept = JSON.parse(readFileSync(join(cache, 'tokenizer.texts.json'), 'utf8')) as { texts: [number, string][] };
      assert.ok(kept.texts.length > 0);
      // A tokenizer that would fail to load, with its identity kept: the kept texts answer.
      const tokenizer = join(copy.dir, 'tokenizer', 'tokenizer.json');
      garble(tokenizer);
      assert.equal(await answerFresh(copy.dir, g, cache), expected);
      // A sample with ids not kept loads the tokenizer, which fails: its texts are skipped.
      const missing = JSON.parse(await answerFresh(copy.dir, other, cache));
      if (missing.token_ids.some((id: number) => !kept.texts.some(([k]) => k === id))) assert.equal(missing.token_text, null);
      // A tokenizer file with a new modification time is not the one the texts came from.
      const later = Date.now() / 1000 - 3600;
      utimesSync(tokenizer, later, later);
      assert.equal(JSON.parse(await answerFresh(copy.dir, g, cache)).token_text, null);
      // Restored, it loads and the texts are kept again for it.
      copyFileSync(fixturePath('miles-demo', 'run', 'tokenizer', 'tokenizer.json'), tokenizer);
      utimesSync(tokenizer, later - 60, later - 60);
      assert.equal(await answerFresh(copy.dir, g, cache), expected);
      garble(tokenizer);
      assert.equal(await answerFresh(copy.dir, g, cache), expected);
    } finally {
      copy.dispose();
    }
  });

  it('keeps where the mirror\'s row groups lie: used while the mirror is the same file, not once it changes', async () => {
    const copy = copyFixtureRun();
    try {
      const cache = cacheDir();
      const g = goldens.find((x) => x.id === 1)!;
      const expected = await answerFresh(copy.dir, g, cache);
      const path = join(cache, 'rollout_1.mirror.json');
      const kept = JSON.parse(readFileSync(path, 'utf8')) as { layout: string };
      // Statistics altered in the kept layout so that no row group admits the sample: believed while the
      // mirror is the file it was found in (the sample is then not in the mirror)...
      const layout = JSON.parse(kept.layout);
      for (const group of layout.groups) for (const c of group[3]) if (c[1] === 'sample_index') c[2] = c[3] = Buffer.from(Int32Array.of(-5).buffer).toString('hex');
      writeFileSync(path, JSON.stringify({ ...kept, layout: JSON.stringify(layout) }));
      await assert.rejects(answerFresh(copy.dir, g, cache), /unknown sample_index/);
      // ...and not once the mirror has a new modification time: its footer is walked again.
      const mirror = join(copy.dir, 'dashboard_columns', 'rollout_1.parquet');
      const later = Date.now() / 1000 - 3600;
      utimesSync(mirror, later, later);
      assert.equal(await answerFresh(copy.dir, g, cache), expected);
      assert.notEqual(JSON.parse(readFileSync(path, 'utf8')).source, (kept as unknown as { source: string }).source);
    } finally {
      copy.dispose();
    }
  });

  it('keeps the catalog a whole step\'s join found, with every file\'s samples, for a later token read', async () => {
    const copy = copyFixtureRun();
    try {
      const cache = cacheDir();
      const g = goldens.find((x) => x.id === 2)!;
      const joining = await DumpReader.open(copy.dir, { cacheDir: cache });
      await joining.step(2);
      await joining.cacheWritten();
      await joining.close();
      const kept = catalogOf(cache, 2);
      const roots = kept.twinOf.filter((t, i) => t === i);
      assert.deepEqual(kept.samples.map(([i]) => i).sort(), roots, 'every distinct rank file\'s samples');
      const other = kept.samples.find(([, samples]) => !samples.includes(g.idx))!;
      for (const [name] of kept.files.filter((_, i) => kept.twinOf[i] === other[0])) garble(join(copy.dir, name));
      assert.equal(diffJson(JSON.parse(await answerFresh(copy.dir, g, cache)), g.body), null);
    } finally {
      copy.dispose();
    }
  });

  it('ignores a damaged catalog file and writes a good one', async () => {
    const run = fixturePath('miles-demo', 'run');
    const cache = cacheDir();
    const g = goldens.find((x) => x.id === 1)!;
    const expected = await answerFresh(run, g, cache);
    const path = join(cache, 'train_1.catalog.json');
    const good = readFileSync(path, 'utf8');
    for (const damage of ['{', JSON.stringify({ ...JSON.parse(good), twinOf: [3, 0, 0, 0] }), good.replace(/"samples":\[.*\]\}$/, '"samples":[[0,"x"]]}')]) {
      writeFileSync(path, damage);
      assert.equal(await answerFresh(run, g, cache), expected);
      assert.equal(readFileSync(path, 'utf8'), good);
    }
  });

  it('writes nothing while a request is being answered: the catalog, the mirror layout and the texts follow the answer', async () => {
    const run = fixturePath('miles-demo', 'run');
    const cache = cacheDir();
    const g = goldens[0];
    const reader = await DumpReader.open(run, { cacheDir: cache });
    const written = () => ['tokenizer.texts.json', `train_${g.id}.catalog.json`, `rollout_${g.id}.mirror.json`].filter((f) => existsSync(join(cache, f)));
    try {
      const done = foreground.begin();
      let answered = false;
      try {
        const text = await answer(reader, g);
        assert.equal(diffJson(JSON.parse(text), g.body), null);
        // many turns of the event loop, and the cache's own writes time: still nothing while it is answered
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(written(), [], 'written while the answer was being given');
        answered = true;
      } finally {
        done();
      }
      assert.ok(answered);
      await reader.cacheWritten();
      assert.deepEqual(written().sort(), [`rollout_${g.id}.mirror.json`, 'tokenizer.texts.json', `train_${g.id}.catalog.json`].sort());
    } finally {
      await reader.close();
    }
  });
});

describe('a damaged token mirror', () => {
  it('is read around: the tokens come from the rollout dump, equal to the golden, and the damage is said once', async () => {
    const run = copyFixtureRun();
    try {
      const mirror = join(run.dir, 'dashboard_columns', 'rollout_0.parquet');
      writeFileSync(mirror, readFileSync(mirror).subarray(0, Math.floor(statSync(mirror).size / 2)));
      ageTree(run.dir);
      const g = goldens.find((x) => x.id === 0)!;
      assert.ok(g, 'a golden of step 0');
      const reader = await DumpReader.open(run.dir, {});
      try {
        assert.equal(diffJson(JSON.parse(await answer(reader, g)), g.body), null);
        await answer(reader, g);
        const said = reader.warnings().filter((w) => w.includes('rollout_0.parquet'));
        assert.equal(said.length, 1, JSON.stringify(reader.warnings()));
        assert.match(said[0], /dashboard_columns\/rollout_0\.parquet: .*\(the tokens are read from the rollout dump instead\)$/);
      } finally {
        await reader.close();
      }
    } finally {
      run.dispose();
    }
  });

  it('with a whole footer but a damaged row: that row is read around, from the rollout dump', async () => {
    const run = copyFixtureRun();
    try {
      const mirror = join(run.dir, 'dashboard_columns', 'rollout_0.parquet');
      const bytes = readFileSync(mirror);
      // the page headers of every row group's `tokens` chunk made unreadable; the footer (and so the file's opening) is whole
      const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
      let damaged = 0;
      for (const rg of meta.row_groups) {
        for (const col of rg.columns) {
          if (col.meta_data?.path_in_schema[0] !== 'tokens') continue;
          const at = Number(col.meta_data.dictionary_page_offset ?? col.meta_data.data_page_offset);
          bytes.fill(0xff, at, at + 16);
          damaged++;
        }
      }
      assert.ok(damaged > 0, 'the mirror has a tokens column');
      writeFileSync(mirror, bytes);
      ageTree(run.dir);
      const g = goldens.find((x) => x.id === 0)!;
      const reader = await DumpReader.open(run.dir, {});
      try {
        assert.equal(diffJson(JSON.parse(await answer(reader, g)), g.body), null);
        const said = reader.warnings().filter((w) => w.includes('rollout_0.parquet'));
        assert.equal(said.length, 1, JSON.stringify(reader.warnings()));
        assert.match(said[0], /\(the tokens are read from the rollout dump instead\)$/);
      } finally {
        await reader.close();
      }
    } finally {
      run.dispose();
    }
  });
});
