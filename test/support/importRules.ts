// The layer rules of the source tree (bytes → model → query → JSON → view), checked over the import statements.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** One import that breaks a layer rule. */
export interface ImportViolation {
  /** The importing file, relative to the checked root. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  rule: string;
}

interface ImportStatement {
  specifier: string;
  /** `import type …` / `export type … from`: erased at compile time, so it loads nothing. */
  typeOnly: boolean;
}

const STATIC_IMPORT = /(?:^|[\n;])\s*(import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC_IMPORT = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The import statements of one source text (static, re-exports and dynamic imports). */
export function importsOf(text: string): ImportStatement[] {
  const out: ImportStatement[] = [];
  for (const m of text.matchAll(STATIC_IMPORT)) {
    // `export const x = …` has no `from`: only re-exports name a module.
    if (m[1] === 'export' && !/\sfrom\s+['"]/.test(m[0])) continue;
    out.push({ specifier: m[3], typeOnly: m[2] !== undefined });
  }
  for (const m of text.matchAll(DYNAMIC_IMPORT)) out.push({ specifier: m[1], typeOnly: false });
  return out;
}

/** The layer a repository-relative path belongs to (`src/run`, `web`, …), or null outside the checked layers. */
function layerOf(rel: string): string | null {
  const parts = rel.split(sep);
  if (parts[0] === 'web') return 'web';
  if (parts[0] === 'src' && parts.length > 2) return `src/${parts[1]}`;
  if (parts[0] === 'src') return 'src';
  return null;
}

const NODE_BUILTINS = new Set(builtinModules);
const FS_MODULES = new Set(['fs', 'node:fs', 'fs/promises', 'node:fs/promises']);

/** The run's face: all that the layers above src/run/ may import of it. */
const RUN_FACE = new Set(['src/run/model.ts', 'src/run/open.ts', 'src/run/errors.ts'].map((p) => p.split('/').join(sep)));
/** Layers that write runs: the collector and the demo. */
const WRITERS = new Set(['src/collect', 'src/demo']);
/** Layers that see a run only through its face (their tests may build one from the adapters). */
const ABOVE_THE_FACE = new Set(['src/queries', 'src/server', 'src/commands']);

/** What the app imports of src beside the wire types: the column frame codec and the search query grammar it shares with the server. */
const APP_SHARED = new Set(['src/formats/columnFrame.ts', 'src/formats/searchQuery.ts'].map((p) => p.split('/').join(sep)));

/** Why `from` may not import `to` (layers; `target` the file) or the bare module `bare`; null when allowed. */
function ruleBroken(from: string, to: string | null, target: string | null, bare: string | null, typeOnly: boolean, isTest: boolean, file: string): string | null {
  if (bare !== null) {
    if (APP_SHARED.has(file) && (bare.startsWith('node:') || NODE_BUILTINS.has(bare))) return 'a module the app shares runs in the browser: no Node modules';
    // A query's test may stage run files to open a model over; the query itself never reads them.
    if (from === 'src/queries' && FS_MODULES.has(bare) && !isTest) return 'queries never touch the file system';
    if (from === 'src/wire' && !typeOnly) return 'the wire module holds types only';
    return null;
  }
  if (to === null || to === from) return null;
  if (ABOVE_THE_FACE.has(from) && to === 'src/run' && !isTest && target !== null && !RUN_FACE.has(target)) {
    return `${from} sees a run only through src/run/model.ts, open.ts and errors.ts`;
  }
  if (from === 'src/formats' || from === 'src/run') {
    if (to === 'src/queries' || to === 'src/server' || to === 'web') return `${from} is below ${to}`;
    if (from === 'src/formats' && to === 'src/run') return 'formats are below the run model';
  }
  if (from === 'src/queries' && (to === 'src/server' || to === 'web')) return `queries are below ${to}`;
  // The writers of runs build on the codecs alone: what the collector and the demo share with the reader is in src/formats.
  if (WRITERS.has(from) && !isTest) {
    if (to === 'src/run' && target !== null && !RUN_FACE.has(target)) return `${from} writes through src/formats, never src/run/ internals`;
    if (WRITERS.has(to)) return `${from} and ${to} do not import each other`;
  }
  if (from === 'src/wire' && to !== 'src/wire') return 'the wire module imports nothing but itself';
  if (from === 'web' && to.startsWith('src')) {
    if (target !== null && APP_SHARED.has(target)) return null;
    if (to !== 'src/wire') return 'the app reads answers through src/wire only';
    if (!typeOnly) return 'the app imports only types from src (`import type`)';
  }
  return null;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Every source file under `root/src` and `root/web`: its path and its path relative to the root. */
function checkedFiles(root: string): { path: string; file: string }[] {
  return ['src', 'web'].flatMap((top) => {
    try {
      return sourceFiles(join(root, top)).map((path) => ({ path, file: relative(root, path) }));
    } catch {
      return [];
    }
  });
}

/** Every import under `root/src` and `root/web` that breaks a layer rule. */
export function importViolations(root: string): ImportViolation[] {
  const out: ImportViolation[] = [];
  for (const { path, file } of checkedFiles(root)) {
    const from = layerOf(file);
    if (from === null) continue;
    for (const { specifier, typeOnly } of importsOf(readFileSync(path, 'utf8'))) {
      const isPath = specifier.startsWith('.') || specifier.startsWith('/');
      const target = isPath ? relative(root, resolve(dirname(path), specifier)) : null;
      const to = target === null ? null : layerOf(target);
      const rule = ruleBroken(from, to, target, isPath ? null : specifier, typeOnly, /\.test\.tsx?$/.test(file), file);
      if (rule) out.push({ file, specifier, rule });
    }
  }
  return out;
}

/**
 * Every runtime import circle among the source files under `root/src` and `root/web` (type-only imports load
 * nothing and are left out; tests too): each circle as its files, relative to the root, sorted.
 */
export function importCircles(root: string): string[][] {
  const edges = new Map<string, string[]>();
  for (const { path, file } of checkedFiles(root)) {
    if (/\.test\.tsx?$/.test(file)) continue;
    const to: string[] = [];
    for (const { specifier, typeOnly } of importsOf(readFileSync(path, 'utf8'))) {
      if (typeOnly || !specifier.startsWith('.')) continue;
      to.push(relative(root, resolve(dirname(path), specifier)));
    }
    edges.set(file, to);
  }
  // Tarjan's strongly connected components: a component of more than one file (or a file importing itself) is a circle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) circles.push(component.sort());
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return circles.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
