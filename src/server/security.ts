// Request gatekeeping: only GET/HEAD, and only Host names this server answers to (DNS-rebinding defence).
import type { MiddlewareHandler } from 'hono';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];

/** The host part of a Host header value (`name`, `name:port`, `[v6]:port`), lower-cased. */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  // A bare IPv6 literal has several colons and no port.
  if (colon >= 0 && h.indexOf(':', colon + 1) < 0) return h.slice(0, colon);
  return h;
}

/** Host names accepted: loopback, the bound address (unless a wildcard), and every `--allow-host`. */
export function allowedHosts(boundHost: string, extra: readonly string[]): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  const bound = boundHost.trim().toLowerCase();
  if (bound && bound !== '0.0.0.0' && bound !== '::' && bound !== '[::]') {
    names.add(bound.includes(':') && !bound.startsWith('[') ? `[${bound}]` : bound);
    names.add(bound);
  }
  for (const h of extra) if (h.trim()) names.add(hostName(h));
  return names;
}

/**
 * How many Host headers the request carried. Node keeps only the first in `headers`, so a second one
 * (`Host: 127.0.0.1` then `Host: evil.example`) is visible only in the raw list.
 */
function hostHeaderCount(env: unknown): number | null {
  const raw = (env as { incoming?: { rawHeaders?: string[] } } | undefined)?.incoming?.rawHeaders;
  if (!Array.isArray(raw)) return null;
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === 'host') n++;
  return n;
}

export function hostGuard(allowed: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    // Exactly one Host: a proxy and this server could otherwise each read a different one.
    const count = hostHeaderCount(c.env);
    if (count !== null && count > 1) return c.json({ detail: `exactly one Host header is accepted, got ${count}` }, 400);
    const header = c.req.header('host');
    if (header !== undefined && header.includes(',')) return c.json({ detail: 'exactly one Host is accepted, got a list' }, 400);
    if (header === undefined || !allowed.has(hostName(header))) {
      return c.json({ detail: `host not allowed: ${JSON.stringify(header ?? '')}; start the server with --allow-host NAME to accept it` }, 403);
    }
    await next();
  };
}

/** Nothing here writes or runs anything: every other method is refused. */
export const readOnlyMethods: MiddlewareHandler = async (c, next) => {
  if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
    c.header('Allow', 'GET, HEAD');
    return c.json({ detail: 'Method Not Allowed' }, 405);
  }
  await next();
  c.header('X-Content-Type-Options', 'nosniff');
};
