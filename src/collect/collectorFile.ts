// `dashboard/collector.json`: how a producer on any node that sees the run directory finds the
// collector — its address and the run's token. Readable by the owner only; the server never serves it.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import * as z from 'zod';
import { COLLECTOR_FILE } from '../formats/dashboard/layout.ts';

export interface CollectorInfo {
  /** `http://host:port`, as producers should dial it. */
  address: string;
  token: string;
  pid: number;
  started_ts: number;
}

const schema = z.strictObject({ address: z.string(), token: z.string().min(16), pid: z.int(), started_ts: z.number() });

/**
 * A fresh random token (256 bits as hex: URL-safe, and never starting with `-`, which a command line would take for
 * an option, as `--token -x…` is to the GPU sampler's argparse).
 */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

export function collectorFileText(info: CollectorInfo): string {
  return JSON.stringify(info, null, 1) + '\n';
}

/** Reads a dashboard directory's `collector.json`; throws a message naming the file. */
export function readCollectorFile(dashboardDir: string): CollectorInfo {
  const path = join(dashboardDir, COLLECTOR_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`no collector found: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const r = schema.safeParse(JSON.parse(text));
  if (!r.success) throw new Error(`${path} is not a collector file: ${r.error.issues[0].path.join('.')} ${r.error.issues[0].message}`);
  return r.data;
}

/**
 * Whether the collector `info` names still runs: it answers `GET /v1/status` at its address, with its token,
 * as the process that wrote the file. A refused or unanswered connection, or anything else answering there
 * (a port taken over since), means it is gone: after a `kill -9` or a lost node, the next collector takes over.
 */
export function collectorAnswers(info: CollectorInfo, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL('/v1/status', info.address);
    } catch {
      resolve(false);
      return;
    }
    const req = request(url, { headers: { authorization: `Bearer ${info.token}` }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (body.length < 4096) body += d; // a status is small: what answers at length is no collector
      });
      res.on('end', () => {
        try {
          const doc = JSON.parse(body);
          resolve(res.statusCode === 200 && doc.collector === 'rlsight' && doc.pid === info.pid && doc.started_ts === info.started_ts);
        } catch {
          resolve(false);
        }
      });
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
