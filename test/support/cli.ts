// The command line the tests spawn. bin/rlsight.mjs runs the dist/ bundle directly (no freshness check on
// the start path), so a test that spawns it first rebuilds a bundle older than the sources.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFresh } from '../../bin/freshness.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** bin/rlsight.mjs, to spawn with process.execPath. */
export const RLSIGHT_BIN = join(REPO, 'bin', 'rlsight.mjs');

/** Rebuilds dist/ when it is missing or older than any file under src/. */
export function ensureCliBuilt(): void {
  if (!isFresh(join(REPO, 'dist', 'cli.js'), join(REPO, 'src'))) execFileSync('npm', ['run', '--silent', 'build:cli'], { cwd: REPO, stdio: 'inherit' });
}

/** Builds the standalone trace page script (`rlsight trace` inlines it) when it is missing. */
export function ensureTracePageBuilt(): void {
  if (!existsSync(join(REPO, 'web', 'dist', 'trace-standalone.js'))) execFileSync('npm', ['run', '--silent', 'build:trace'], { cwd: REPO, stdio: 'inherit' });
}

/** The URL a spawned `rlsight serve` prints once it listens; rejects when it exits first. */
export function servingUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /serving (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`rlsight serve exited with ${code}: ${out}`)));
  });
}

/**
 * Resolves once a server has no warm-up running (`/api/meta` without `warmup`): the server at a URL, or the
 * meta a function asks (an app in this process); fails after a minute, naming how far the warm-up got.
 */
export async function warmedUp(server: string | (() => Promise<{ warmup?: unknown }>)): Promise<void> {
  const meta = typeof server === 'string' ? async () => (await (await fetch(new URL('/api/meta', server))).json()) as { warmup?: unknown } : server;
  let last: unknown;
  for (let i = 0; i < 600; i++) {
    last = (await meta()).warmup;
    if (last === undefined) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the warm-up did not finish within a minute (at ${JSON.stringify(last)})`);
}
