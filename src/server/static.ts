// The web app's built files (`web/dist`): `/` is index.html, assets by relative path; never outside the folder.
import { createReadStream, existsSync, realpathSync, type Stats, statSync } from 'node:fs';
import { isInside } from '../formats/fileAccess.ts';
import { extname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { PACKAGE_ROOT } from '../ownFiles.ts';

export const DEFAULT_STATIC_DIR = join(PACKAGE_ROOT, 'web', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * The file under `root` named by a URL path, or null. Segments are checked after decoding, so
 * `..`, encoded slashes, backslashes and NUL never resolve, and the result must stay inside `root`.
 */
export function resolveStatic(root: string, urlPath: string): string | null {
  const parts: string[] = [];
  for (const raw of urlPath.split('/')) {
    if (raw === '') continue;
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (seg === '.' || seg === '..' || /[/\\\0]/.test(seg) || seg.startsWith('.')) return null;
    parts.push(seg);
  }
  if (parts.length === 0) return null;
  const file = resolve(root, ...parts);
  if (!file.startsWith(root + sep)) return null;
  let st: Stats;
  try {
    st = statSync(file);
    // Compared once symlinks resolve: a link inside the folder may not serve a file from elsewhere.
    if (!isInside(realpathSync(root), realpathSync(file))) return null;
  } catch {
    return null;
  }
  return st.isFile() ? file : null;
}

function notFound(c: Context): Response {
  c.header('Cache-Control', 'no-cache');
  return c.json({ detail: 'Not Found' }, 404);
}

function fileResponse(c: Context, file: string): Response {
  const st = statSync(file);
  const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
  // Revalidate every time, so an upgraded app never runs from a stale cache.
  c.header('Cache-Control', 'no-cache');
  c.header('ETag', etag);
  c.header('Last-Modified', st.mtime.toUTCString());
  if (c.req.header('if-none-match') === etag) return c.body(null, 304);
  c.header('Content-Type', TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream');
  c.header('Content-Length', String(st.size));
  if (c.req.method === 'HEAD') return c.body(null, 200);
  return c.body(Readable.toWeb(createReadStream(file)) as ReadableStream, 200);
}

/** Mounts `/`, `/static/*` (the reference's prefix) and top-level asset paths; `/api/*` stays with the API. */
export function mountStatic(app: Hono, root: string = DEFAULT_STATIC_DIR): void {
  const base = resolve(root);
  app.get('/', (c) => {
    const index = join(base, 'index.html');
    if (!existsSync(index)) {
      return c.html(
        '<!doctype html><title>rlsight</title><p>The web app is not built: run <code>npm run build:web</code>. The API is under <code>/api/</code>.</p>',
        200,
        { 'Cache-Control': 'no-cache' },
      );
    }
    return fileResponse(c, index);
  });
  app.get('/static/*', (c) => {
    const file = resolveStatic(base, c.req.path.slice('/static'.length));
    return file ? fileResponse(c, file) : notFound(c);
  });
  app.get('*', (c) => {
    if (c.req.path.startsWith('/api/') || c.req.path === '/api') return c.json({ detail: 'Not Found' }, 404);
    const file = resolveStatic(base, c.req.path);
    return file ? fileResponse(c, file) : notFound(c);
  });
}
