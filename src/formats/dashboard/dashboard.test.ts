// The layout's encoders write exactly what miles' collector wrote: every fixture line re-encodes to
// the same bytes, and the decoders name the field a bad record gets wrong.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fixturePath } from '../../../test/support/fixtures.ts';
import {
  FIELDS,
  STREAMS,
  decodeLine,
  encodeMeta,
  encodeRecord,
  hourKey,
  hourStart,
  isStreamName,
  laneCatalogJson,
  LaneCatalogFold,
  parseLaneCatalogJson,
  partitionFile,
  partitionKeyOf,
  partitionTs,
  type StreamName,
} from './index.ts';

const dashboard = fixturePath('miles-demo', 'run', 'dashboard');

/** `gpu_util/19700112_13.jsonl` → `gpu_util`; `metrics.jsonl` → `metrics`. */
function streamOf(rel: string): StreamName {
  const name = rel.includes('/') ? rel.split('/')[0] : rel.replace(/\.jsonl$/, '');
  assert.ok(isStreamName(name), rel);
  return name;
}

function jsonlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...jsonlFiles(p));
    else if (name.endsWith('.jsonl')) out.push(p);
  }
  return out.sort();
}

function reencode(stream: StreamName, line: string): string {
  const d = decodeLine(stream, line);
  assert.ok(d.ok, `${line}: ${d.ok ? '' : JSON.stringify(d.problem)}`);
  return encodeRecord(stream, d.record, d.floatKeys);
}

describe('dashboard layout', () => {
  it('names hours in UTC as time.strftime does, and back', () => {
    assert.equal(hourKey(1000030.0), '19700112_13');
    assert.equal(hourKey(1755800010.5), '20250821_18');
    assert.equal(hourKey(1755802799.999), '20250821_18');
    assert.equal(hourKey(1755802800), '20250821_19');
    assert.equal(hourStart('20250821_18'), 1755799200);
    assert.equal(hourStart('2025082_18'), null);
    assert.equal(partitionFile('gpu_util', '20250821_18'), 'gpu_util/20250821_18.jsonl');
    assert.equal(partitionKeyOf('20250821_18.jsonl'), '20250821_18');
    assert.equal(partitionKeyOf('notes.txt'), null);
  });

  it('files phases by end hour and open markers by start hour', () => {
    assert.equal(partitionTs('phases', { t0: 3599, t1: 3601 }), 3601);
    assert.equal(partitionTs('phases', { t0: 3599, t1: -1.0 }), 3599);
    assert.equal(partitionTs('gpu_util', { ts: 7 }), 7);
  });

  it('declares every stream once, in dataclass key order', () => {
    assert.deepEqual([...STREAMS].sort(), Object.keys(FIELDS).sort());
    const line = '{"ts":1000000.0,"node":"10.0.0.1","gpu":0,"util":20,"mem_mb":30000,"power_w":300}';
    assert.deepEqual(Object.keys(JSON.parse(line)), [...FIELDS.gpu_util]);
  });

  it('re-encodes every line of the reference fixture byte for byte', () => {
    const files = jsonlFiles(dashboard);
    assert.ok(files.length >= 6);
    let lines = 0;
    for (const file of files) {
      const stream = streamOf(relative(dashboard, file).replaceAll('\\', '/'));
      const text = readFileSync(file, 'utf8');
      assert.ok(text.endsWith('\n'));
      const out = text
        .slice(0, -1)
        .split('\n')
        .map((l) => reencode(stream, l))
        .join('\n');
      assert.equal(out + '\n', text, file);
      lines += text.split('\n').length - 1;
    }
    assert.ok(lines > 3000, `${lines} lines`);
  });

  it('re-encodes the reference examples of the streams the fixture lacks', () => {
    const examples: [StreamName, string][] = [
      ['gpu_processes', '{"ts":1755800010.5,"node":"10.0.0.1","gpu":0,"pid":4321,"name":"sglang::scheduler","mem_mb":40960}'],
      ['data_buffer', '{"ts":1755800011.0,"length":5}'],
      ['phases', '{"name":"rollout","t0":1755800012.0,"t1":-1.0,"node":"10.0.0.1","gpus":[0,1],"rank":0,"role":"train"}'],
      ['engine_series', '{"ts":1755800014.0,"addr":"http://10.0.0.1:15000","metric":"sglang_num_running_reqs","labels":{"engine_type":"unified","dp_rank":"1"},"value":11.0}'],
      ['topology', '{"ts":1755800013.0,"engines":[{"addr":"http://10.1.0.5:15000","worker_type":"external","engine_rank":-1,"gpus":[],"gpu_uuids":[]}]}'],
      ['metrics', '{"ts":1755800015.0,"step_key":"train/step","step":7,"metrics":{"train/loss":1.5,"train/step":7}}'],
      ['metrics', '{"ts":1.0,"step_key":null,"step":null,"metrics":{"a":NaN,"b":-Infinity,"c":"x\\u00e9","d":true,"e":1e-06,"f":12}}'],
      ['engine_series', '{"ts":2.0,"addr":"a","metric":"m","labels":{},"value":NaN}'],
    ];
    for (const [stream, line] of examples) assert.equal(reencode(stream, line), line);
  });

  it('re-encodes meta.json and lane_catalog.json byte for byte', () => {
    const metaText = readFileSync(join(dashboard, 'meta.json'), 'utf8');
    const meta = JSON.parse(metaText);
    assert.equal(encodeMeta(meta), metaText);
    const catalogText = readFileSync(join(dashboard, 'lane_catalog.json'), 'utf8');
    assert.equal(laneCatalogJson(parseLaneCatalogJson(catalogText)), catalogText);
  });

  it('folds the fixture streams into the fixture catalog', () => {
    const fold = new LaneCatalogFold();
    for (const file of jsonlFiles(dashboard)) {
      const stream = streamOf(relative(dashboard, file).replaceAll('\\', '/'));
      for (const line of readFileSync(file, 'utf8').trimEnd().split('\n')) {
        const d = decodeLine(stream, line);
        assert.ok(d.ok);
        if (stream === 'phases') fold.addPhase(d.record as never);
        if (stream === 'topology') fold.addTopology(d.record as never);
        if (stream === 'gpu_util') fold.addGpu(d.record as never);
      }
    }
    assert.equal(fold.toJson(), readFileSync(join(dashboard, 'lane_catalog.json'), 'utf8'));
  });

  it('names the field a bad record gets wrong', () => {
    const cases: [StreamName, string, string, RegExp][] = [
      ['gpu_util', '{"ts":1.0,"node":"n","gpu":0,"util":20.5,"mem_mb":1,"power_w":1}', 'util', /int/i],
      ['gpu_util', '{"ts":1.0,"node":"n","gpu":0,"util":20,"mem_mb":1}', 'power_w', /missing/],
      ['gpu_util', '{"ts":1.0,"node":"n","gpu":0,"util":20,"mem_mb":1,"power_w":1,"x":1}', '', /unexpected key 'x'/],
      ['gpu_util', '{"ts":NaN,"node":"n","gpu":0,"util":20,"mem_mb":1,"power_w":1}', 'ts', /expected a finite number/],
      ['topology', '{"ts":1.0,"engines":[{"addr":"a","worker_type":"regular","engine_rank":0,"gpus":[["n","0"]],"gpu_uuids":[]}]}', 'engines.0.gpus.0.1', /expected an integer/],
      ['metrics', '{"ts":1.0,"step_key":null,"step":null,"metrics":{"a":[1]}}', 'metrics.a', /number, a string or a boolean/],
      ['phases', '{"name":"x","t0":1.0', '', /not JSON/],
      ['data_buffer', '', '', /empty line/],
    ];
    for (const [stream, line, field, message] of cases) {
      const d = decodeLine(stream, line);
      assert.ok(!d.ok, line);
      assert.equal(d.problem.field, field, line);
      assert.match(d.problem.message, message, line);
    }
  });
});
