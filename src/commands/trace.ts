// `rlsight trace FILE.pt [--out DIR] [--no-serve]`: slime's viewer cache (compatible) and a
// self-contained page of ours for one slime rollout dump, optionally served on loopback.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../ownFiles.ts';
import { CommandUsageError, outPath, parseFlags, portFlag, removeOnExit } from './common.ts';
import { isDirectory } from './runPaths.ts';
import { timelineCache, timelineCacheJson } from '../queries/slimeTimeline.ts';
import { traceDetails, traceView } from '../queries/slimeTraceView.ts';
import { SlimeDumpError } from '../run/errors.ts';
import { sampleTrace } from '../run/model.ts';
import { openDumpFile } from '../run/open.ts';
import type { TraceDetails } from '../wire/trace.ts';

export const TRACE_USAGE = `  rlsight trace FILE.pt [--out DIR] [--no-serve] [--port N]
                                              slime's trace viewer cache + a self-contained page for one dump`;

/** A usage problem of `rlsight trace` (exit 2, as every command's). */
export class TraceCommandError extends CommandUsageError {}

export interface TraceOutputs {
  cache: string;
  html: string;
  samples: number;
}

const STANDALONE_JS = join(PACKAGE_ROOT, 'web', 'dist', 'trace-standalone.js');

/** The page: the explorer's script and the data inlined, so it opens from file:// without a server. */
export function standalonePage(title: string, data: unknown, script: string): string {
  // `<` is escaped so neither `</script>` nor `<!--` in any attr can end the data block.
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  const esc = title.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc}</title></head>
<body>
<script id="rlsight-trace-data" type="application/json">${json}</script>
<script>${script.replace(/<\/script/gi, '<\\/script')}</script>
</body></html>
`;
}

/** Reads the dump and writes both files into `outDir`; never beside the dump unless `outDir` is its folder. */
export async function writeTraceOutputs(ptPath: string, outDir: string, now = Date.now() / 1000): Promise<TraceOutputs> {
  const abs = resolve(ptPath);
  const dump = await openDumpFile(abs, ptPath);
  const traced = dump.samples.filter((s) => sampleTrace(s) !== null).length;
  if (traced === 0) {
    throw new SlimeDumpError(ptPath, `none of its ${dump.samples.length} samples carries a trace (slime records one per sample while it generates; dumps made without tracing have none)`);
  }
  if (!existsSync(STANDALONE_JS)) throw new Error(`the trace page script is not built (${basename(STANDALONE_JS)}); run: npm run build:web`);
  const stem = basename(abs).replace(/\.pt$/, '');
  writing(outDir, () => mkdirSync(outDir, { recursive: true }));
  const cachePath = join(outDir, `${stem}.trace_timeline_cache.json`);
  const cache = timelineCache(dump.samples, abs, now);
  writing(cachePath, () => writeFileSync(cachePath, timelineCacheJson(cache)));
  const answer = traceView(dump.samples, dump);
  const details: Record<string, TraceDetails> = {};
  for (const s of dump.samples) {
    const d = traceDetails(s);
    if (d) details[String(s.row)] = d;
  }
  const htmlPath = join(outDir, `${stem}.trace.html`);
  const page = standalonePage(`${basename(abs)} trace`, { title: `${basename(abs)} trace`, answer, details }, readFileSync(STANDALONE_JS, 'utf8'));
  writing(htmlPath, () => writeFileSync(htmlPath, page));
  return { cache: cachePath, html: htmlPath, samples: cache.sample_count };
}

/** Runs a write into `--out`, its failure said as one (`--out: cannot write …: permission denied`), not a raw errno. */
function writing(path: string, write: () => void): void {
  try {
    write();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' ? 'permission denied' : code === 'EROFS' ? 'read-only file system' : code === 'ENOSPC' ? 'no space left on the device' : (e as Error).message;
    throw new Error(`--out: cannot write ${path}: ${why}`);
  }
}

/**
 * The run a dump belongs to, which `--out` may not lie in (a run is read, never written): `DIR` for slime's
 * `DIR/rollout_data/N.pt` layout, else the dump's own folder (where a `--save-debug-rollout-data` template wrote it).
 */
export function dumpRunDir(pt: string): string {
  const folder = dirname(pt);
  return basename(resolve(folder)) === 'rollout_data' ? dirname(folder) : folder;
}

/** The dump files in a folder and its `rollout_data/`, named relative to it (for a message). */
function dumpsIn(dir: string): string[] {
  const found: string[] = [];
  for (const sub of ['', 'rollout_data']) {
    try {
      for (const n of readdirSync(join(dir, sub)).sort()) if (n.endsWith('.pt')) found.push(join(sub, n));
    } catch {
      // no such folder
    }
  }
  return found;
}


export async function traceCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: { out: { type: 'string' }, 'no-serve': { type: 'boolean' }, serve: { type: 'boolean' }, port: { type: 'string' }, host: { type: 'string' } },
  });
  if (positionals.length !== 1) throw new TraceCommandError('trace: expected exactly one FILE.pt');
  if (values.serve && values['no-serve']) throw new TraceCommandError('trace: --serve and --no-serve ask opposite things; give one');
  const pt = positionals[0];
  if (!existsSync(pt)) throw new TraceCommandError(`trace: no such file: ${pt}`);
  if (isDirectory(pt)) {
    const dumps = dumpsIn(pt);
    const held = dumps.length === 0 ? 'it holds no .pt file' : `it holds ${dumps.slice(0, 3).join(', ')}${dumps.length > 3 ? ` and ${dumps.length - 3} more` : ''}`;
    throw new TraceCommandError(`trace: ${pt} is a directory; give one rollout dump file (FILE.pt): ${held}`);
  }
  const port = portFlag(values.port, 0);
  // checked before the dump is read, as the exports check theirs: a directory, never inside the run
  const outDir = values.out !== undefined ? outPath(values.out, { dir: dumpRunDir(pt), label: 'trace' }, 'dir') : mkdtempSync(join(tmpdir(), 'rlsight-trace-'));
  // A temp folder made for serving goes when the server does; with --no-serve it is the output, and stays.
  if (!values.out && !values['no-serve']) removeOnExit(outDir);
  const out = await writeTraceOutputs(pt, outDir).catch((e: unknown) => {
    if (!values.out) rmSync(outDir, { recursive: true, force: true });
    throw e;
  });
  console.log(`pt: ${resolve(pt)} | cache: ${out.cache} | html: ${out.html} | samples: ${out.samples}`);
  if (values['no-serve']) return 0;
  // Only the two files are served, on loopback: not the dump's folder.
  const host = values.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const file = path === '/' ? out.html : path === '/cache.json' ? out.cache : null;
    if (req.method !== 'GET' || !file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file.endsWith('.html') ? 'text/html; charset=utf-8' : 'application/json' }).end(readFileSync(file));
  });
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(port, host, ok));
  const addr = server.address();
  console.log(`serving http://${host}:${typeof addr === 'object' && addr ? addr.port : port}/   (Ctrl+C to stop; the page also opens from file://)`);
  await new Promise<void>((done) => {
    const stop = (): void => void server.close(() => done());
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

export { SlimeDumpError };
