// The only door to data: typed fetches of the rlsight HTTP API, with 503 retry and readable errors.
import { COLUMNS_ACCEPT, decodeColumns, type Frame } from './columns.ts';
import { scopedPath } from './chosenRun.ts';
import { store } from './store.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly path: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** Requests currently waiting on a dump that is still being written (503). */
export const stillWriting = store<string[]>([]);

const RETRY_503_MS = 1500;
const MAX_503_RETRIES = 40;

export type Params = Record<string, string | number | boolean | null | undefined>;

export function apiUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return `./api/${scopedPath(path)}${s ? `?${s}` : ''}`;
}

// Absolute server paths must never reach the screen; keep only the file name.
export function redactPaths(text: string): string {
  return text.replace(/(?:[A-Za-z]:)?(?:\/[\w.@+~-]+){2,}\/?/g, (m) => `…/${m.split('/').filter(Boolean).pop() ?? ''}`);
}

function detailText(body: unknown, fallback: string): string {
  if (body && typeof body === 'object' && 'detail' in body) {
    const d = (body as { detail: unknown }).detail;
    if (typeof d === 'string') return d.replace(/^'(.*)'$/s, '$1');
    if (Array.isArray(d))
      return d
        .map((e) => {
          const loc = Array.isArray(e?.loc) ? e.loc.filter((x: unknown) => x !== 'query' && x !== 'path').join('.') : '';
          return `${loc ? `${loc}: ` : ''}${e?.msg ?? JSON.stringify(e)}`;
        })
        .join('; ');
    if (d != null) return JSON.stringify(d);
  }
  if (body && typeof body === 'object' && 'error' in body) return String((body as { error: unknown }).error);
  return fallback;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((res, rej) => {
    const t = setTimeout(res, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), rej(signal.reason)), { once: true });
  });

async function request(path: string, params: Params, signal?: AbortSignal, accept = 'application/json'): Promise<Response> {
  const url = apiUrl(path, params);
  let marked = false;
  try {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(url, { signal, headers: { accept } });
      if (res.status === 503 && attempt < MAX_503_RETRIES) {
        if (!marked) stillWriting.set([...stillWriting.get(), url]);
        marked = true;
        const after = Number(res.headers.get('retry-after'));
        await sleep(Number.isFinite(after) && after > 0 ? Math.min(after * 1000, 10_000) : RETRY_503_MS, signal);
        continue;
      }
      if (!res.ok) {
        const text = await res.text();
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          /* plain-text error body */
        }
        const msg = detailText(body, text && text.length < 300 ? text : res.statusText || 'request failed');
        throw new ApiError(res.status, redactPaths(msg), path);
      }
      return res;
    }
  } finally {
    if (marked) stillWriting.set(stillWriting.get().filter((u) => u !== url));
  }
}

/** A series answer as a columnar frame (typed arrays over the received bytes; see columns.ts). */
export async function getColumns<H>(path: string, params: Params = {}, signal?: AbortSignal): Promise<Frame<H>> {
  const res = await request(path, params, signal, COLUMNS_ACCEPT);
  return decodeColumns<H>(await res.arrayBuffer());
}

export async function getJson<T>(path: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const res = await request(path, params, signal);
  return (await res.json()) as T;
}

export interface Raster<H> {
  header: H;
  values: Uint8Array;
}

/** The heatmap framing: [u32 LE header length][JSON header][u8 matrix]. */
export async function getRaster<H>(path: string, params: Params = {}, signal?: AbortSignal): Promise<Raster<H>> {
  const res = await request(path, params, signal);
  const buf = await res.arrayBuffer();
  const len = new DataView(buf).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, len))) as H;
  return { header, values: new Uint8Array(buf, 4 + len) };
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.status >= 500 ? `server error (${e.status}): ${e.detail}` : e.detail;
  if (e instanceof Error) return redactPaths(e.message);
  return String(e);
}

export const isAbort = (e: unknown) => e instanceof DOMException && e.name === 'AbortError';
