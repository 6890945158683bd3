// `rlsight collect` as a child process of a test, in its own process group (so a test can kill the group),
// returned once it has written its collector.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RLSIGHT_BIN } from './cli.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RunningCollector {
  child: ChildProcess;
  address: string;
  token: string;
  exited: Promise<number | null>;
  output: () => string;
}

/** Kills the collector's whole process group (nothing if it is gone already). */
export function killCollectorGroup(c: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-c.pid!, signal);
  } catch {
    // already gone
  }
}

/** Starts a collector on `runDir`; `started` collects every child so the suite can kill what is left. */
export async function startCollectProcess(runDir: string, opts: { flushInterval: string; started: ChildProcess[]; previousPid?: number }): Promise<RunningCollector> {
  const child = spawn(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', runDir, '--listen', '127.0.0.1:0', '--flush-interval', opts.flushInterval], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  opts.started.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const file = join(runDir, 'dashboard', 'collector.json');
  for (let i = 0; i < 1200; i++) {
    if (existsSync(file)) {
      try {
        const info = JSON.parse(readFileSync(file, 'utf8'));
        if (info.pid === child.pid && info.pid !== opts.previousPid) return { child, address: info.address, token: info.token, exited, output: () => out };
      } catch {
        // being replaced
      }
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  killCollectorGroup(child);
  throw new Error(`collector did not start:\n${out}`);
}
