// What is refused before the app sees a request, worded as every other refusal (`{"detail": …}`): a request
// Node's parser rejects (headers over its limit, bytes that are not HTTP), a Host the URL cannot be built
// from, and a path with `.` or `..` segments (the URL would resolve them into another route).
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

function json(status: number, detail: string): { head: Record<string, string>; body: string } {
  const body = JSON.stringify({ detail });
  return { head: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) }, body };
}

/** Why a request cannot be routed as sent, or null. */
export function rawRefusal(req: Pick<IncomingMessage, 'url' | 'headers'>): { status: number; detail: string } | null {
  const host = req.headers.host;
  if (host !== undefined) {
    if (host.includes(',')) return { status: 400, detail: 'exactly one Host is accepted, got a list' };
    try {
      new URL(`http://${host}/`);
    } catch {
      return { status: 400, detail: `the Host header ${JSON.stringify(host.slice(0, 200))} is not a host name` };
    }
  }
  const raw = req.url ?? '/';
  const path = raw.split(/[?#]/, 1)[0];
  for (const segment of path.split('/')) {
    let name = segment;
    try {
      name = decodeURIComponent(segment);
    } catch {
      // not percent-encoding: the route decides
    }
    if (name === '.' || name === '..') return { status: 400, detail: `path: a "${name}" segment is refused (${JSON.stringify(path.slice(0, 200))})` };
  }
  return null;
}

/** `listener` behind the refusals above. */
export function refusingMalformed(listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const refusal = rawRefusal(req);
    if (refusal === null) return listener(req, res);
    const { head, body } = json(refusal.status, refusal.detail);
    res.writeHead(refusal.status, { ...head, connection: 'close' }).end(body);
  };
}

/** Answers what Node's parser refuses with a worded body (Node's own answer has none), then closes the connection. */
export function answerClientErrors(server: Server, maxHeaderBytes: number): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const [status, reason, detail] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', `the request's URL and headers are over ${Math.round(maxHeaderBytes / 1024)} KiB: shorten the query`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'the request did not arrive in time']
          : [400, 'Bad Request', `not a well-formed HTTP request (${err.code ?? err.message})`];
    const { head, body } = json(status, detail);
    const lines = Object.entries(head).map(([k, v]) => `${k}: ${v}`);
    socket.end(`HTTP/1.1 ${status} ${reason}\r\n${lines.join('\r\n')}\r\nconnection: close\r\n\r\n${body}`);
  });
}
