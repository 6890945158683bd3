import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ensureCliBuilt, RLSIGHT_BIN } from '../../test/support/cli.ts';
import { defaultEngineState, fakeEngine, routerMetricsText, serveText } from '../../test/support/fakeSglang.ts';
import { decodeLine, type EngineSample } from '../formats/dashboard/index.ts';
import type { LogLevel } from './collector.ts';
import { startCollectorService } from './service.ts';
import { DEFAULT_METRIC_WHITELIST, SglangScraper } from './sglangScraper.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-scrape-'));
after(() => rmSync(root, { recursive: true, force: true }));

function collect(): { samples: EngineSample[]; lines: string[]; sink: (s: EngineSample, l: string) => void } {
  const samples: EngineSample[] = [];
  const lines: string[] = [];
  return { samples, lines, sink: (s, l) => (samples.push(s), lines.push(l)) };
}

function logs(): { lines: string[]; log: (level: LogLevel, m: string) => void } {
  const lines: string[] = [];
  return { lines, log: (level, m) => lines.push(`${level}: ${m}`) };
}

describe('SGLang scraper', () => {
  it('auto reads the router until a producer reports the engines, then each engine directly, and says which', async () => {
    const engine = await fakeEngine();
    const router = await serveText({ '/engine_metrics': () => routerMetricsText([{ addr: engine.addr, state: defaultEngineState() }]) });
    const out = collect();
    const { lines, log } = logs();
    let reported: string[] = [];
    const scraper = new SglangScraper({ mode: 'auto', routerAddr: router.addr, engineAddrs: () => [], reportedEngines: () => reported, sink: out.sink, log });
    try {
      assert.ok((await scraper.scrapeOnce(10)) > 5);
      await scraper.scrapeOnce(12);
      assert.deepEqual([router.hits.get('/engine_metrics'), engine.hits.get('/metrics')], [2, undefined]);
      assert.ok(out.samples.every((s) => s.addr === engine.addr));
      reported = [engine.addr];
      await scraper.scrapeOnce(14);
      assert.deepEqual([router.hits.get('/engine_metrics'), engine.hits.get('/metrics')], [2, 1]);
      assert.deepEqual(lines, [
        `info: sglang scrape mode auto: no topology reported; reading the router's ${router.addr}/engine_metrics`,
        'info: sglang scrape mode auto: reading the 1 engine(s) of the reported topology directly',
      ]);
      const none = logs();
      const idle = new SglangScraper({ mode: 'auto', engineAddrs: () => [], reportedEngines: () => [], sink: out.sink, log: none.log });
      assert.equal(await idle.scrapeOnce(1), 0);
      assert.equal(await idle.scrapeOnce(2), 0);
      assert.deepEqual(none.lines, ['info: sglang scrape mode auto: no topology reported and no router known yet (pass --sglang-router or have a producer report one); nothing to scrape']);
    } finally {
      await router.close();
      await engine.close();
    }
  });

  it('direct: normalizes names, keeps engine_type and dp_rank, one timestamp per tick, skips a failed engine', async () => {
    const a = await fakeEngine();
    const b = await fakeEngine({ ...defaultEngineState(), running: [3] });
    const dead = await fakeEngine();
    await dead.close();
    const out = collect();
    const { lines, log } = logs();
    const scraper = new SglangScraper({ mode: 'direct', engineAddrs: () => [a.addr, dead.addr, b.addr], sink: out.sink, log });
    try {
      const kept = await scraper.scrapeOnce(1000.5);
      assert.equal(kept, out.samples.length);
      assert.deepEqual(new Set(out.samples.map((s) => s.ts)), new Set([1000.5]));
      assert.deepEqual(new Set(out.samples.map((s) => s.addr)), new Set([a.addr, b.addr]));
      const running = out.samples.filter((s) => s.addr === a.addr && s.metric === 'sglang_num_running_reqs');
      assert.deepEqual(running.map((s) => [s.labels, s.value]), [
        [{ dp_rank: '0', engine_type: 'unified' }, 16],
        [{ dp_rank: '1', engine_type: 'unified' }, 5],
      ]);
      const names = new Set(out.samples.map((s) => s.metric));
      for (const n of names) assert.ok(DEFAULT_METRIC_WHITELIST.includes(n), n);
      assert.ok(names.has('sglang_time_to_first_token_seconds_sum') && names.has('sglang_time_to_first_token_seconds_count'));
      assert.ok(!names.has('sglang_uptime_seconds'));
      const ttft = out.samples.find((s) => s.addr === a.addr && s.metric === 'sglang_time_to_first_token_seconds_sum')!;
      assert.equal(ttft.value, 2351897.9474117756);
      assert.deepEqual(ttft.labels, {});
      for (const l of out.lines) assert.ok(decodeLine('engine_series', l).ok, l);
      assert.equal(out.lines[0], `{"ts":1000.5,"addr":"${a.addr}","metric":"sglang_num_running_reqs","labels":{"dp_rank":"0","engine_type":"unified"},"value":16.0}`);
      assert.equal(lines.filter((l) => l.includes(`scrape of engine ${dead.addr} failed`)).length, 1);
      await scraper.scrapeOnce(1002.5);
      assert.equal(lines.filter((l) => l.includes(`scrape of engine ${dead.addr} failed`)).length, 1, 'rate-limited');
      a.failing = true;
      const before = out.samples.length;
      await scraper.scrapeOnce(1004.5);
      assert.ok(out.samples.slice(before).every((s) => s.addr === b.addr), 'a failing engine is skipped, never filled in');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('router: the engine comes from worker_addr, and a sample without it is dropped', async () => {
    const engines = [
      { addr: 'http://10.0.0.1:15000', state: defaultEngineState() },
      { addr: 'http://10.0.0.1:15004', state: { ...defaultEngineState(), running: [7] } },
    ];
    const router = await serveText({ '/engine_metrics': () => routerMetricsText(engines) + 'sglang_num_running_reqs{engine_type="unified"} 99.0\n' });
    const out = collect();
    const { lines, log } = logs();
    const scraper = new SglangScraper({ mode: 'router', routerAddr: router.addr, engineAddrs: () => [], sink: out.sink, log, whitelist: ['sglang_num_running_reqs', 'sglang_gen_throughput'] });
    try {
      await scraper.scrapeOnce(7);
      assert.equal(router.hits.get('/engine_metrics'), 1);
      assert.deepEqual(
        out.samples.map((s) => [s.addr, s.metric, s.value]),
        [
          ['http://10.0.0.1:15000', 'sglang_num_running_reqs', 16],
          ['http://10.0.0.1:15000', 'sglang_num_running_reqs', 5],
          ['http://10.0.0.1:15000', 'sglang_gen_throughput', 2100.5],
          ['http://10.0.0.1:15004', 'sglang_num_running_reqs', 7],
          ['http://10.0.0.1:15004', 'sglang_gen_throughput', 2100.5],
        ],
      );
      assert.ok(lines.some((l) => /router sample for sglang_num_running_reqs lacks worker_addr; dropping/.test(l)));
    } finally {
      await router.close();
    }
  });

  it('inside the collector: scrapes the engines of the last topology and writes engine_series', async () => {
    const engine = await fakeEngine();
    const dir = join(root, 'run', 'dashboard');
    let clock = 1_755_800_000;
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, log: () => {}, now: () => clock, sglang: { mode: 'auto', intervalS: 3600 } });
    try {
      // nothing to scrape before a topology names an engine
      assert.equal(await svc.scraper!.scrapeOnce(clock), 0);
      const topo = `{"ts":${clock}.0,"engines":[{"addr":"${engine.addr}","worker_type":"regular","engine_rank":0,"gpus":[["127.0.0.1",0]],"gpu_uuids":[null]}]}`;
      const res = await fetch(`${svc.address}/v1/streams/topology`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: topo });
      assert.equal(res.status, 200);
      clock += 2;
      const kept = await svc.scraper!.scrapeOnce(clock);
      assert.ok(kept > 5);
      svc.collector.flush();
      const files = readdirSync(join(dir, 'engine_series')).filter((f) => f.endsWith('.jsonl'));
      assert.equal(files.length, 1);
      const rows = readFileSync(join(dir, 'engine_series', files[0]), 'utf8').trimEnd().split('\n');
      assert.equal(rows.length, kept);
      assert.ok(rows.every((r) => r.startsWith(`{"ts":${clock}.0,"addr":"${engine.addr}"`)));
      assert.deepEqual(svc.collector.latest.runningRequests.get(engine.addr), { ts: clock, value: 21 });
    } finally {
      await svc.close();
      await engine.close();
    }
  });
});

describe('a slow engine', () => {
  const text = '# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{engine_type="unified"} 3\n';

  it('holds back no other engine: a tick skips an engine still answering the previous one', async () => {
    const hits = new Map<string, number>();
    let releaseSlow: (body: string) => void = () => {};
    const get = (url: string): Promise<string> => {
      hits.set(url, (hits.get(url) ?? 0) + 1);
      if (url.startsWith('http://slow')) return new Promise((r) => (releaseSlow = r));
      return Promise.resolve(text);
    };
    const out = collect();
    const scraper = new SglangScraper({ mode: 'direct', engineAddrs: () => ['http://fast:1', 'http://slow:1'], sink: out.sink, log: () => {}, get });
    const first = scraper.scrapeOnce(1);
    // the fast engine's answer is in (pending callbacks run before setImmediate's)
    await new Promise((r) => setImmediate(r));
    // the next tick reads the fast engine and leaves the slow one, still busy, alone
    assert.equal(await scraper.scrapeOnce(2), 1);
    assert.deepEqual([hits.get('http://fast:1/metrics'), hits.get('http://slow:1/metrics')], [2, 1]);
    releaseSlow(text);
    assert.equal(await first, 2);
    assert.deepEqual(
      out.samples.map((s) => [s.ts, s.addr]),
      [[2, 'http://fast:1'], [1, 'http://fast:1'], [1, 'http://slow:1']],
    );

    // ticking on its own, the fast engine keeps its interval while the slow one has not answered
    const looping = new SglangScraper({ mode: 'direct', engineAddrs: () => ['http://fast:2', 'http://slow:2'], intervalS: 0.5, sink: () => {}, log: () => {}, get });
    looping.start();
    for (let i = 0; i < 400 && (hits.get('http://fast:2/metrics') ?? 0) < 3; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok((hits.get('http://fast:2/metrics') ?? 0) >= 3, 'the fast engine was read on three ticks');
    assert.equal(hits.get('http://slow:2/metrics'), 1);
    const stopped = looping.stop();
    releaseSlow(text);
    await stopped;
  });

  it('warns again when an engine fails in a new way', async () => {
    const failures = [new Error('HTTP 503'), new Error('HTTP 503'), new DOMException('The operation was aborted due to timeout', 'TimeoutError')];
    const { lines, log } = logs();
    const scraper = new SglangScraper({ mode: 'direct', engineAddrs: () => ['http://e:1'], sink: () => {}, log, get: () => Promise.reject(failures.shift()) });
    for (const t of [1, 2, 3]) await scraper.scrapeOnce(t);
    assert.deepEqual(lines, [
      'warn: scrape of engine http://e:1 failed (HTTP 503); skipping this tick (further warnings like this suppressed for 300s)',
      'warn: scrape of engine http://e:1 failed (no answer within 5s); skipping this tick (further warnings like this suppressed for 300s)',
    ]);
  });
});

describe('auto scrape mode inside the collector', () => {
  it('records engine metrics through --sglang-router while no producer reports a topology, and the engines once one does', async () => {
    const engine = await fakeEngine();
    const router = await serveText({ '/engine_metrics': () => routerMetricsText([{ addr: engine.addr, state: defaultEngineState() }]) });
    const dir = join(root, 'auto', 'dashboard');
    let clock = 1_755_800_000;
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, log: () => {}, now: () => clock, sglang: { mode: 'auto', router: router.addr, intervalS: 3600 } });
    try {
      // the tick the collector starts with
      for (let i = 0; i < 100 && svc.scraper!.ticks === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(router.hits.get('/engine_metrics'), 1);
      clock += 2;
      const kept = await svc.scraper!.scrapeOnce(clock);
      assert.ok(kept > 5);
      // the engine the router revealed joins the topology as external: still no producer topology
      svc.collector.syncExternalEngines();
      assert.deepEqual(svc.collector.engineAddrs(), [engine.addr]);
      clock += 2;
      assert.equal(await svc.scraper!.scrapeOnce(clock), kept);
      assert.deepEqual([router.hits.get('/engine_metrics'), engine.hits.get('/metrics')], [3, undefined]);
      const topo = `{"ts":${clock}.0,"engines":[{"addr":"${engine.addr}","worker_type":"regular","engine_rank":0,"gpus":[["127.0.0.1",0]],"gpu_uuids":[null]}]}`;
      const res = await fetch(`${svc.address}/v1/streams/topology`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: topo });
      assert.equal(res.status, 200);
      clock += 2;
      assert.equal(await svc.scraper!.scrapeOnce(clock), kept);
      assert.deepEqual([router.hits.get('/engine_metrics'), engine.hits.get('/metrics')], [3, 1]);
      svc.collector.flush();
      const files = readdirSync(join(dir, 'engine_series')).filter((f) => f.endsWith('.jsonl'));
      const rows = files.flatMap((f) => readFileSync(join(dir, 'engine_series', f), 'utf8').trimEnd().split('\n'));
      assert.equal(rows.length, 4 * kept);
      assert.ok(rows.every((r) => decodeLine('engine_series', r).ok && r.includes(`"addr":"${engine.addr}"`)));
    } finally {
      await svc.close();
      await router.close();
      await engine.close();
    }
  });

  it('rlsight collect --sglang-router records engine metrics with no producer at all', async () => {
    ensureCliBuilt();
    const engine = await fakeEngine();
    const router = await serveText({ '/engine_metrics': () => routerMetricsText([{ addr: engine.addr, state: defaultEngineState() }]) });
    const runDir = join(root, 'cli-router');
    const child = spawn(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', runDir, '--listen', '127.0.0.1:0', '--sglang-router', router.addr, '--sglang-scrape-interval', '0.2', '--flush-interval', '0.2'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const dir = join(runDir, 'dashboard', 'engine_series');
      for (let i = 0; i < 300 && !(existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.jsonl'))); i++) await new Promise((r) => setTimeout(r, 100));
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output);
      const rows = readdirSync(dir)
        .filter((f) => f.endsWith('.jsonl'))
        .flatMap((f) => readFileSync(join(dir, f), 'utf8').trimEnd().split('\n'));
      assert.ok(rows.some((r) => r.includes(`"addr":"${engine.addr}","metric":"sglang_num_running_reqs"`)), output);
      assert.match(output, /sglang scrape mode auto: no topology reported; reading the router's http:\/\/127\.0\.0\.1:\d+\/engine_metrics/);
    } finally {
      child.kill('SIGKILL');
      await router.close();
      await engine.close();
    }
  });
});

describe('router scrape mode inside the collector', () => {
  it('drops an engine the router no longer names from the topology after 3 ticks or 30 s, whichever is longer', async () => {
    // an engine restarted on a new port: the router names the old address, then only the new one
    const before = 'http://10.0.0.1:15000';
    const after = 'http://10.0.0.1:15010';
    let named = [before];
    const router = await serveText({ '/engine_metrics': () => routerMetricsText(named.map((addr) => ({ addr, state: defaultEngineState() }))) });
    const dir = join(root, 'router-expiry', 'dashboard');
    let clock = 1_755_800_000;
    // 3 ticks of 20 s: an engine leaves after 60 s unseen
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, log: () => {}, now: () => clock, sglang: { mode: 'router', router: router.addr, intervalS: 20 } });
    try {
      // the tick the collector starts with
      for (let i = 0; i < 100 && svc.scraper!.ticks === 0; i++) await new Promise((r) => setTimeout(r, 20));
      svc.collector.syncExternalEngines();
      assert.deepEqual(svc.collector.engineAddrs(), [before]);
      named = [after];
      const tick = async (dt: number): Promise<string[]> => {
        clock += dt;
        assert.ok((await svc.scraper!.scrapeOnce(clock)) > 0);
        svc.collector.syncExternalEngines();
        return svc.collector.engineAddrs();
      };
      assert.deepEqual(await tick(2), [before, after]);
      // 52 s unseen: longer than 30 s but within 3 ticks
      assert.deepEqual(await tick(50), [before, after]);
      assert.deepEqual(await tick(10), [after]);
      // a producer's snapshot does not bring it back either
      const topo = `{"ts":${clock}.0,"engines":[{"addr":"http://10.0.0.2:15000","worker_type":"regular","engine_rank":0,"gpus":[["10.0.0.2",0]],"gpu_uuids":[null]}]}`;
      const res = await fetch(`${svc.address}/v1/streams/topology`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: topo });
      assert.equal(res.status, 200);
      assert.deepEqual(svc.collector.engineAddrs(), ['http://10.0.0.2:15000', after]);
      svc.collector.flush();
      const snapshots = readFileSync(join(dir, 'topology.jsonl'), 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { ts: number; engines: { addr: string; worker_type: string }[] });
      assert.deepEqual(
        snapshots.map((s) => [s.ts - 1_755_800_000, s.engines.map((e) => `${e.addr} ${e.worker_type}`)]),
        [
          [0, [`${before} external`]],
          [2, [`${before} external`, `${after} external`]],
          [62, [`${after} external`]],
          [62, ['http://10.0.0.2:15000 regular', `${after} external`]],
        ],
      );
    } finally {
      await svc.close();
      await router.close();
    }
  });
});

describe('prometheus-config and the router registration', () => {
  it('prints a config scraping the router and the collector', async () => {
    const { prometheusConfig } = await import('../commands/prometheusConfig.ts');
    const yml = prometheusConfig({ router: '10.0.0.5:30000', collector: '10.0.0.1:7789', scrapeIntervalS: 2 });
    assert.match(yml, /scrape_interval: 2s/);
    assert.match(yml, /job_name: sglang-router\n {4}metrics_path: \/engine_metrics\n {4}static_configs:\n {6}- targets: \["10.0.0.5:30000"\]/);
    assert.match(yml, /job_name: rlsight-collector\n {4}metrics_path: \/metrics\n {4}static_configs:\n {6}- targets: \["10.0.0.1:7789"\]/);
    // a duration Prometheus takes (whole units), and https kept as the job's scheme
    const https = prometheusConfig({ router: 'r.example:443', routerHttps: true, scrapeIntervalS: 0.5 });
    assert.match(https, /scrape_interval: 500ms/);
    assert.match(https, /job_name: sglang-router\n {4}metrics_path: \/engine_metrics\n {4}scheme: https\n/);
    assert.throws(() => prometheusConfig({ router: 'r:1', scrapeIntervalS: 0.0001 }), /--scrape-interval: 0\.0001 s is not a whole number of milliseconds/);
  });

  it('the command refuses a host that is no host, and an interval Prometheus cannot take', async () => {
    ensureCliBuilt();
    const run = (...args: string[]) => spawnSync(process.execPath, [RLSIGHT_BIN, 'prometheus-config', ...args], { encoding: 'utf8', timeout: 30_000 });
    for (const [args, said] of [
      [['--router', "a'b:80"], /--router: 'a'b' is not a host name or address/],
      [['--router', 'h:1', '--scrape-interval', '0.0001'], /--scrape-interval: 0\.0001 s is not a whole number of milliseconds/],
    ] as [string[], RegExp][]) {
      const r = run(...args);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, said);
    }
    // the collector's own flags that end up in collector.json or name the run
    const collect = (...args: string[]) => spawnSync(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', join(root, 'never'), ...args], { encoding: 'utf8', timeout: 30_000 });
    for (const [args, said] of [
      [['--advertise', ''], /--advertise: expected the host name or address/],
      [['--advertise', 'bad host/x'], /--advertise: expected the host name or address/],
      [['--run-name', ' '], /--run-name: expected a name/],
      [['--listen', 'no host:80'], /--listen: 'no host' is not a host name or address/],
      [['--listen', '10.254.254.254:7872'], /--listen: cannot listen on 10\.254\.254\.254:7872 \(not an address of this machine\)/],
      [['--listen', '10.254.254.254:0'], /--listen: cannot listen on 10\.254\.254\.254:0 \(not an address of this machine\)/],
      [['--buffer-cap', '0x10'], /--buffer-cap: expected an integer, got '0x10'/],
      [['--buffer-cap', '0'], /--buffer-cap: 0 is out of range \[1, inf\]/],
    ] as [string[], RegExp][]) {
      const r = collect(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, said);
    }
    assert.equal(existsSync(join(root, 'never')), false, 'nothing made for a collector that could not start');
    const { parseCollectFlags } = await import('../commands/collect.ts');
    assert.equal(parseCollectFlags(['--dump-details', join(root, 'never'), '--advertise', '[::1]']).advertiseHost, '::1', 'bare: the collector brackets it');
    assert.equal(run('--router', 'sglang_router:30000').status, 0, 'a container service name');
    const ok = run('--router', 'https://h.example:8443/');
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /scheme: https\n {4}static_configs:\n {6}- targets: \["h\.example:8443"\]/);
  });

  it('a producer names the router; a bad address is a 400', async () => {
    const svc = await startCollectorService({ dashboardDir: join(root, 'run2', 'dashboard'), port: 0, flushIntervalS: 3600, log: () => {}, sglang: { mode: 'router', intervalS: 3600 } });
    try {
      const post = (body: string, token = svc.token) => fetch(`${svc.address}/v1/router`, { method: 'POST', headers: { Authorization: `Bearer ${token}` }, body });
      let res = await post('{"addr":"http://10.0.0.5:30000"}');
      assert.equal(res.status, 200);
      assert.equal(svc.scraper!.routerAddr, 'http://10.0.0.5:30000');
      res = await post('{"addr":"10.0.0.5"}');
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: string }).error, /addr: expected http\(s\):\/\/host:port/);
      res = await post('{"addr":"http://x:1"}', 'wrong-token-wrong-token-wrong-token-xx');
      assert.equal(res.status, 401);
      assert.equal(svc.scraper!.routerAddr, 'http://10.0.0.5:30000');
    } finally {
      await svc.close();
    }
  });
});
