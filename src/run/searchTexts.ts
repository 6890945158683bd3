// A run's searchable texts, step by step: each step's sample texts read batch by batch while its dump is
// decoded, kept lower-cased (memory, and `--cache-dir` when given) with a word index (flexsearch) built behind
// the scans, so a search over many steps reads each step once. The matching itself is the queries'.
import type { Index as FlexIndex } from 'flexsearch';
import type { DerivedCache } from './derivedCache.ts';
import { SEARCH_NON_WORD, type SearchableText, type SearchTextSource, type StepTexts, type StepTextsSource } from './model.ts';

/** Steps whose texts and index stay in memory. */
const STEPS_KEPT = 16;
// 2: the index holds words split and folded here (flexsearch encoder skipped).
const CACHE_VERSION = 2;
const NOT_ASCII = /[^\x00-\x7f]/;

/** flexsearch, loaded with the first index (a server's start loads no search library). */
let flexsearch: Promise<typeof import('flexsearch')> | undefined;

async function wordIndex(): Promise<FlexIndex> {
  // a failed load is tried again by the next index
  const FlexSearch = (await (flexsearch ??= import('flexsearch').catch((e: unknown) => {
    flexsearch = undefined;
    throw e;
  }))).default;
  // Positions are not scored (resolution 1): the index only narrows which samples a scan verifies. Entries
  // and lookups are words already split and folded here, so flexsearch's own encoder is skipped.
  return new FlexSearch.Index({ tokenize: 'strict', resolution: 1, encode: (text: string) => text.split(' ') });
}

/**
 * A lower-case word as the index holds it: letters that differ only in case-insensitive matching (ſ and s,
 * ς and σ) made equal, so a word the verifying scan would accept is never missing from the candidates.
 */
function foldWord(w: string): string {
  return NOT_ASCII.test(w) ? w.toUpperCase().toLowerCase() : w;
}

/** Work on an index between two yields to the event loop (ms). */
const INDEX_SLICE_MS = 10;
/** How often a paused index build looks whether the reads it waits for are done (ms). */
const READ_WAIT_MS = 20;

/** One step's texts with the word index over them, once built. */
class IndexedStepTexts<T extends SearchableText> implements StepTexts<T> {
  index: FlexIndex | null = null;

  constructor(
    readonly key: string,
    readonly stamp: string,
    readonly texts: T[],
    readonly lower: Record<string, string>[],
    readonly ascii: Uint16Array,
    readonly ids: Map<string, number[]>,
  ) {}

  lookup(word: string): Set<number> | null {
    if (!this.index) return null;
    return new Set((this.index.search(foldWord(word), { limit: this.texts.length }) as (number | string)[]).map(Number));
  }
}

function prepare<T extends SearchableText>(key: string, stamp: string, texts: T[]): IndexedStepTexts<T> {
  const ids = new Map<string, number[]>();
  texts.forEach((t, i) => {
    for (const id of t.ids) ids.set(id, [...(ids.get(id) ?? []), i]);
  });
  const lower = texts.map((t) => Object.fromEntries(Object.entries(t.fields).map(([k, v]) => [k, v.toLowerCase()])));
  return new IndexedStepTexts(key, stamp, texts, lower, new Uint16Array(texts.length), ids);
}

/** Builds a step's index a slice at a time, calling `between` (served by the event loop) between slices. */
async function buildIndex(st: IndexedStepTexts<SearchableText>, between: () => Promise<void>): Promise<FlexIndex> {
  const index = await wordIndex();
  let until = performance.now() + INDEX_SLICE_MS;
  // One entry per sample holding each distinct word of all its fields once: what a lookup needs, at a
  // fraction of the cost of indexing every occurrence.
  for (let i = 0; i < st.lower.length; i++) {
    const words = new Set<string>();
    for (const text of Object.values(st.lower[i])) for (const w of text.split(SEARCH_NON_WORD)) if (w) words.add(foldWord(w));
    index.add(i, [...words].join(' '));
    if (performance.now() >= until) {
      await between();
      until = performance.now() + INDEX_SLICE_MS;
    }
  }
  return index;
}

/** The batches of one step as one. */
function joinBatches<T extends SearchableText>(key: string, stamp: string, parts: readonly IndexedStepTexts<T>[]): IndexedStepTexts<T> {
  if (parts.length === 1) return parts[0];
  const texts: T[] = [];
  const lower: Record<string, string>[] = [];
  const ascii = new Uint16Array(parts.reduce((n, p) => n + p.texts.length, 0));
  const ids = new Map<string, number[]>();
  for (const part of parts) {
    const at = texts.length;
    for (const t of part.texts) texts.push(t);
    for (const l of part.lower) lower.push(l);
    ascii.set(part.ascii, at);
    for (const [id, positions] of part.ids) ids.set(id, [...(ids.get(id) ?? []), ...positions.map((i) => i + at)]);
  }
  return new IndexedStepTexts(key, stamp, texts, lower, ascii, ids);
}

/** A step read for the first time: its batches so far, shared by every search that asks while it is read. */
class StepRead<T extends SearchableText> {
  readonly batches: IndexedStepTexts<T>[] = [];
  private finished = false;
  private error: { cause: unknown } | null = null;
  private wake!: () => void;
  private changed = this.nextChange();

  private nextChange(): Promise<void> {
    return new Promise<void>((r) => (this.wake = r));
  }

  private notify(): void {
    const wake = this.wake;
    this.changed = this.nextChange();
    wake();
  }

  push(batch: IndexedStepTexts<T>): void {
    this.batches.push(batch);
    this.notify();
  }

  finish(): void {
    this.finished = true;
    this.notify();
  }

  fail(cause: unknown): void {
    this.error = { cause };
    this.notify();
  }

  /** Every batch, those read already at once and the rest as they come; the read's failure is rethrown. */
  async *read(): AsyncGenerator<IndexedStepTexts<T>> {
    for (let i = 0; ; ) {
      while (i < this.batches.length) yield this.batches[i++];
      if (this.error) throw this.error.cause;
      if (this.finished) return;
      await this.changed;
    }
  }
}

/**
 * A run's searchable texts: each step's texts and index, kept for STEPS_KEPT steps and, with a cache, on disk
 * (texts plus the exported index), invalidated when the step's files change.
 */
export class SearchTexts<T extends SearchableText = SearchableText> implements StepTextsSource<T> {
  private readonly steps = new Map<string, IndexedStepTexts<T>>();
  private readonly reading = new Map<string, StepRead<T>>();

  constructor(
    private readonly run: SearchTextSource<T>,
    /** Whether scanned steps get an index (a one-shot scan without a cache has no later use for one). */
    private readonly indexing = true,
    /** Where indexes outlive the process (`--cache-dir`); null keeps none. */
    private readonly cache: DerivedCache | null = null,
  ) {}

  /**
   * One step's texts in batches: at once when known (memory or the cache), else as the step's dump is read.
   * That read is shared by the searches asking meanwhile and goes on to the end when they stop listening
   * (a query typed further finds the step whole).
   */
  async *stepBatches(step: number, evaluation: boolean): AsyncGenerator<IndexedStepTexts<T>> {
    const key = `${evaluation ? 'eval_' : ''}${step}`;
    const stamp = await this.run.stepStamp(step, evaluation);
    const known = this.steps.get(key);
    if (known && known.stamp === stamp) {
      // Most recently used last.
      this.steps.delete(key);
      this.steps.set(key, known);
      yield known;
      return;
    }
    const id = `${key}\n${stamp}`;
    let read = this.reading.get(id);
    if (!read) {
      read = new StepRead<T>();
      this.reading.set(id, read);
      void this.readStep(read, key, stamp, step, evaluation).finally(() => this.reading.delete(id));
    }
    yield* read.read();
  }

  private async readStep(read: StepRead<T>, key: string, stamp: string, step: number, evaluation: boolean): Promise<void> {
    try {
      const cached = await this.fromCache(key, stamp);
      if (cached) read.push(cached);
      else
        for await (const batch of this.run.sampleTextBatches(step, evaluation)) {
          if (this.stopped) throw new Error('the search state was stopped');
          read.push(prepare(key, stamp, batch));
        }
      const st = joinBatches(key, stamp, read.batches.length ? read.batches : [prepare<T>(key, stamp, [])]);
      this.steps.set(key, st);
      while (this.steps.size > STEPS_KEPT) this.steps.delete(this.steps.keys().next().value as string);
      read.finish();
      // The index is built once the step has been read, behind the scans, so no answer waits for it.
      this.scheduleIndex(st);
    } catch (e) {
      read.fail(e);
    }
  }

  private stopped = false;

  /** Ends the reads still going on (their steps are not kept): for a process about to exit. */
  stop(): void {
    this.stopped = true;
  }

  private queue: Promise<void> = Promise.resolve();

  /**
   * Builds the index of a scanned step (its first use) and writes the step to the cache, one step at a
   * time behind the scans, so no answer waits for an index.
   */
  scheduleIndex(st: IndexedStepTexts<T>): void {
    if (!this.indexing || st.index || this.queued.has(st)) return;
    this.queued.add(st);
    this.queue = this.queue
      .then(() => new Promise<void>((r) => setImmediate(r)))
      .then(async () => {
        if (!st.index) st.index = await buildIndex(st, () => this.noReads());
        await this.toCache(st);
      })
      .catch(() => {})
      .finally(() => this.queued.delete(st));
  }

  private readonly queued = new Set<IndexedStepTexts<T>>();

  /**
   * Resolves on the next turn of the event loop once no step is being read: an index is built in the time
   * the reads leave (a cold scan of the next steps goes first).
   */
  private async noReads(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    while (this.reading.size > 0 && !this.stopped) await new Promise((r) => setTimeout(r, READ_WAIT_MS));
  }

  /** Resolves once every scheduled index is built (and cached). */
  idle(): Promise<void> {
    return this.queue;
  }

  private async fromCache(key: string, stamp: string): Promise<IndexedStepTexts<T> | null> {
    const text = (await this.cache?.read(`search_${key}.json`)) ?? null;
    if (text === null) return null;
    try {
      const doc = JSON.parse(text) as { version: number; stamp: string; texts: T[]; index: Record<string, string> };
      if (doc.version !== CACHE_VERSION || doc.stamp !== stamp) return null;
      const st = prepare(key, stamp, doc.texts);
      const index = await wordIndex();
      for (const [k, v] of Object.entries(doc.index)) index.import(k, v);
      st.index = index;
      return st;
    } catch {
      // A damaged cache entry is rebuilt from the dump.
      return null;
    }
  }

  private async toCache(st: IndexedStepTexts<T>): Promise<void> {
    const index = st.index;
    if (!index) return;
    await this.cache?.write(`search_${st.key}.json`, () => {
      const parts: Record<string, string> = {};
      index.export((k: string | number, v: unknown) => {
        parts[String(k)] = v as string;
      });
      return JSON.stringify({ version: CACHE_VERSION, stamp: st.stamp, texts: st.texts, index: parts });
    });
  }
}
