// Worker thread body: decodes one rollout dump off the main thread and posts back only its sample records,
// so the dump's large token/log-prob lists never enter (or burden the collector of) the serving thread.
import { parentPort, workerData } from 'node:worker_threads';
import { openTorchFile } from '../../formats/torch/load.ts';
import { decodeRolloutDump } from './rolloutDump.ts';

interface Job {
  path: string;
  file: string;
  rolloutId: number;
  evaluation: boolean;
}

const job = workerData as Job;
try {
  const doc = await openTorchFile(job.path);
  try {
    const dump = decodeRolloutDump(doc.value, { rolloutId: job.rolloutId, evaluation: job.evaluation, file: job.file });
    parentPort!.postMessage({ dump });
  } finally {
    await doc.close();
  }
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  parentPort!.postMessage({ error: { name: err?.name ?? 'Error', message: err?.message ?? String(e), code: err?.code } });
}
