// Worker thread body: decodes one rollout dump off the main thread and posts back only its sample records,
// so the dump's large token/log-prob lists never enter (or burden the collector of) the serving thread.
// Then, when the step has train dumps, it joins groups of rank files alongside the main thread (see TrainStepFiles.joinAll).
// Started ahead of need, it may first read a train step's rank file directories for a token read (see catalogClaimed).
import { parentPort, workerData } from 'node:worker_threads';
import { startTorchDecode } from '../../formats/torch/load.ts';
import { decodeFirstSamples, decodeRolloutDump, RECORDS_ONLY } from './rolloutDump.ts';
import { pendingSamples } from './sampleText.ts';
import { digestTrainRow } from './trainDigest.ts';
import { catalogClaimed, joinClaimed, type JoinGroup, type QuickCatalog } from './trainStep.ts';

/** Rank file directories a spare worker reads between two looks at its messages. */
const CATALOG_BATCH = 64;

interface Job {
  path: string;
  file: string;
  rolloutId: number;
  evaluation: boolean;
  /** Post the dump's first samples this many (whole groups) as soon as they are decoded; 0: only the whole dump. */
  firstSamples: number;
  /** Opcodes decoded between two looks at the samples completed so far, until the first ones are posted. */
  sliceOpcodes: number;
}

/** The rank files to help with (null: none), sent by the main thread whenever it knows them. */
interface TrainJob {
  train: { runDir: string; groups: JoinGroup[]; counter: Int32Array } | null;
}

/** A train step's rank files whose directories to read, taken from a counter shared with the main thread. */
interface CatalogJob {
  id: number;
  paths: string[];
  listedRegular: boolean[];
  counter: Int32Array;
}

/** An error as it crosses threads (the class is rebuilt from `name`). */
export interface WorkerError {
  name: string;
  message: string;
  code?: string;
  /** The file a DumpInconsistent names. */
  file?: string;
}

function describe(e: unknown): WorkerError {
  const err = e as NodeJS.ErrnoException & { file?: unknown };
  const file = typeof err?.file === 'string' ? err.file : undefined;
  return { name: err?.name ?? 'Error', message: err?.message ?? String(e), code: err?.code, file };
}

const port = parentPort!;
// A worker started ahead of need (no workerData) is handed its dump by a first message.
let settleJob!: (job: Job) => void;
let settleTrain!: (train: TrainJob['train']) => void;
const givenJob = new Promise<Job>((r) => (settleJob = r));
const trainJob = new Promise<TrainJob['train']>((r) => (settleTrain = r));
/** A catalog read under way while spare: what it has read so far, and whether it was handed back. */
let catalogRead: { id: number; files: [number, QuickCatalog | null][]; done: boolean } | null = null;

/** Hands back what the catalog read under way has read (the serving thread reads the rest when it needs them). */
function endCatalogRead(): void {
  if (catalogRead === null || catalogRead.done) return;
  catalogRead.done = true;
  port.postMessage({ catalogRead: { id: catalogRead.id, files: catalogRead.files } });
}

/** Reads a train step's rank file directories a batch at a time, so a step given meanwhile is begun after the batch under way. */
async function readCatalog(job: CatalogJob): Promise<void> {
  endCatalogRead();
  const read = (catalogRead = { id: job.id, files: [] as [number, QuickCatalog | null][], done: false });
  while (!read.done) {
    const batch = catalogClaimed(job.paths, job.listedRegular, job.counter, CATALOG_BATCH);
    for (const f of batch) read.files.push(f);
    if (batch.length < CATALOG_BATCH) break;
    await new Promise((r) => setImmediate(r));
  }
  if (catalogRead === read) endCatalogRead();
}

port.on('message', (m: { job?: Job; catalog?: CatalogJob } & Partial<TrainJob>) => {
  // While spare, it may read a train step's rank file directories for a token read first; a step handed to it
  // ends that read (the serving thread reads what it left when it needs it).
  if (m?.catalog) void readCatalog(m.catalog);
  else if (m?.job) {
    endCatalogRead();
    settleJob(m.job);
  }
  else settleTrain(m?.train ?? null);
});
const job = (workerData as Job | null) ?? (await givenJob);

try {
  // Only the records are posted back: the per-token lists are kept as their lengths alone, long texts unread.
  const decode = await startTorchDecode(job.path, RECORDS_ONLY);
  try {
    let file = null;
    // Until the first samples are out, a slice at a time with a look at what is complete between slices.
    if (job.firstSamples > 0) {
      while ((file = decode.advance(job.sliceOpcodes)) === null) {
        const done = pendingSamples(decode.pending());
        if (done.length <= job.firstSamples) continue;
        const samples = decodeFirstSamples(done.slice(0, job.firstSamples + 1), job.file);
        if (samples.length === 0) continue;
        port.postMessage({ first: samples });
        break;
      }
    }
    file ??= decode.advance(Infinity)!;
    const dump = decodeRolloutDump(file.value, { rolloutId: job.rolloutId, evaluation: job.evaluation, file: job.file });
    port.postMessage({ dump });
  } finally {
    await decode.close();
  }
} catch (e) {
  port.postMessage({ error: describe(e) });
}

const train = await trainJob;
if (train) {
  const done = await joinClaimed(train.runDir, train.groups, train.counter, digestTrainRow);
  port.postMessage({ trainDone: { groups: done.groups, raw: done.raw, error: done.error && { i: done.error.i, error: describe(done.error.error) } } });
}
port.close();
