// Where rlsight's own files are, whether it runs from its TypeScript sources (through tsx) or from the
// bundle in dist/ that `npm run build` makes: both keep module paths relative to one root (src/ or dist/).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const self = import.meta.url;

/** True when running the TypeScript sources; false inside the dist/ bundle. */
export const FROM_SOURCE = self.endsWith('.ts');

/** src/ or dist/: this module sits at that root in both layouts. */
const MODULE_ROOT = dirname(fileURLToPath(self));

/** The package's root folder (holds package.json and web/dist). */
export const PACKAGE_ROOT = resolve(MODULE_ROOT, '..');

/** The URL of one of our modules, `path` relative to src/ without extension, e.g. `run/miles/rolloutDecodeWorker`. */
export function moduleUrl(path: string): string {
  return new URL(`${path}${FROM_SOURCE ? '.ts' : '.js'}`, new URL(`file://${MODULE_ROOT}/`)).href;
}

/**
 * A worker thread running module `path` (see `moduleUrl`). From sources it first registers tsx in the
 * worker, as the main thread has; throws when that loader cannot be found.
 */
export function startModuleWorker(path: string, options: WorkerOptions = {}): Worker {
  if (!FROM_SOURCE) return new Worker(new URL(moduleUrl(path)), options);
  const bootstrap = [
    `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};`,
    'register();',
    `await import(${JSON.stringify(moduleUrl(path))});`,
  ].join('\n');
  return new Worker(bootstrap, { ...options, eval: true });
}
