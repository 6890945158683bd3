// Locates the test fixtures (kept in test/fixtures) and makes throwaway copies of their runs with aged mtimes.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { TelemetryStore } from '../../src/run/telemetry/store.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The fixtures folder: `$RLSIGHT_FIXTURES`, else the repository's own `test/fixtures`. */
export const FIXTURES = process.env.RLSIGHT_FIXTURES ?? resolve(repoRoot, 'test', 'fixtures');

export function fixturePath(...parts: string[]): string {
  return join(FIXTURES, ...parts);
}

export function readFixtureJson<T = any>(...parts: string[]): T {
  return JSON.parse(readFileSync(fixturePath(...parts), 'utf8')) as T;
}

/** Sets the mtime (and atime) of every path below `root`, and `root` itself, to `ageSeconds` ago. */
export function ageTree(root: string, ageSeconds = 86_400): void {
  const t = Date.now() / 1000 - ageSeconds;
  const walk = (p: string): void => {
    if (statSync(p).isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    utimesSync(p, t, t);
  };
  walk(root);
}

export interface RunCopy {
  dir: string;
  dispose(): void;
}

/**
 * Copies `fixtures/<name>/run` into a fresh temp folder and ages every mtime by a day,
 * since git does not keep mtimes and the dump reader hides young files.
 */
export function copyFixtureRun(name = 'miles-demo'): RunCopy {
  const base = mkdtempSync(join(tmpdir(), `rlsight-${name}-`));
  const dir = join(base, 'run');
  cpSync(fixturePath(name, 'run'), dir, { recursive: true });
  ageTree(dir);
  return { dir, dispose: () => rmSync(base, { recursive: true, force: true }) };
}

/** The fixture run's telemetry for one suite: copied and opened before its tests, removed after them. */
export function fixtureTelemetry(name = 'miles-demo'): { readonly store: TelemetryStore } {
  let run: RunCopy;
  let store: TelemetryStore;
  before(() => {
    run = copyFixtureRun(name);
    store = TelemetryStore.open(join(run.dir, 'dashboard'));
  });
  after(() => run.dispose());
  return {
    get store() {
      return store;
    },
  };
}

/** A golden answer of the miles-demo fixture. */
export interface Golden {
  file: string;
  request: string;
  status: number;
  content_type?: string;
  body: any;
  normalized?: string[];
  group?: string;
  note?: string;
  deliberately_bad?: boolean;
  binary_decoded?: { header_len: number; header: any; matrix_len: number };
}

export function loadGoldens(name = 'miles-demo'): Golden[] {
  const dir = fixturePath(name, 'golden');
  return readdirSync(dir)
    .filter((f) => /^\d+\.json$/.test(f))
    .sort()
    .map((f) => ({ file: f, ...JSON.parse(readFileSync(join(dir, f), 'utf8')) }));
}

/** Deep equality with a float tolerance; returns the first difference as a path string, or null. */
export function diffJson(actual: unknown, expected: unknown, tol = 1e-6, path = '$'): string | null {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (Object.is(actual, expected)) return null;
    const scale = Math.max(1, Math.abs(expected));
    return Math.abs(actual - expected) <= tol * scale ? null : `${path}: ${actual} != ${expected}`;
  }
  if (expected === null || typeof expected !== 'object') {
    return Object.is(actual, expected) ? null : `${path}: ${JSON.stringify(actual)} != ${JSON.stringify(expected)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${JSON.stringify(actual)?.slice(0, 80)}`;
    if (actual.length !== expected.length) return `${path}: length ${actual.length} != ${expected.length}`;
    for (let i = 0; i < expected.length; i++) {
      const d = diffJson(actual[i], expected[i], tol, `${path}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
    return `${path}: expected an object, got ${JSON.stringify(actual)?.slice(0, 80)}`;
  }
  const ek = Object.keys(expected as object).sort();
  const ak = Object.keys(actual as object).sort();
  if (ek.join('\u0000') !== ak.join('\u0000')) return `${path}: keys [${ak}] != [${ek}]`;
  for (const k of ek) {
    const d = diffJson((actual as any)[k], (expected as any)[k], tol, `${path}.${k}`);
    if (d) return d;
  }
  return null;
}
