// The layer rules hold over the source tree, and the checker catches each kind of violation.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { importCircles, importViolations, importsOf } from './support/importRules.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function tree(files: Record<string, string>): { root: string; dispose(): void } {
  const root = mkdtempSync(join(tmpdir(), 'rlsight-imports-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return { root, dispose: () => rmSync(root, { recursive: true, force: true }) };
}

describe('import direction', () => {
  test('the source tree keeps every layer rule', () => {
    assert.deepEqual(importViolations(repo), []);
  });

  test('no runtime import circle anywhere', () => {
    assert.deepEqual(importCircles(repo), []);
  });

  test('a runtime circle is reported; a type-only import back and a test\'s import are not', () => {
    const t = tree({
      'src/queries/a.ts': "import { b } from './b.ts';\n",
      'src/queries/b.ts': "import { c } from '../server/c.ts';\n",
      'src/server/c.ts': "export { a } from '../queries/a.ts';\n",
      'src/commands/x.ts': "import { y } from './y.ts';\n",
      'src/commands/y.ts': "import type { X } from './x.ts';\n",
      'src/run/p.ts': "import { q } from './p.test.ts';\n",
      'src/run/p.test.ts': "import { p } from './p.ts';\n",
    });
    try {
      assert.deepEqual(importCircles(t.root), [['src/queries/a.ts', 'src/queries/b.ts', 'src/server/c.ts']]);
    } finally {
      t.dispose();
    }
  });

  test('each kind of violation is reported', () => {
    const t = tree({
      'src/run/miles/reader.ts': "import { summary } from '../../queries/rollouts.ts';\nimport type { X } from '../../server/app.ts';\n",
      'src/formats/zip.ts': "import { open } from '../run/model.ts';\n",
      'src/queries/metrics.ts': "import { readFileSync } from 'node:fs';\nimport { stat } from 'fs/promises';\n",
      'src/queries/ok.ts': "import type { Meta } from '../wire/index.ts';\nimport { join } from 'node:path';\nimport type { RunModel } from '../run/model.ts';\nimport { openRunModel } from '../run/open.ts';\nimport { NotFound } from '../run/errors.ts';\n",
      'src/queries/store.ts': "import type { TelemetryStore } from '../run/telemetry/store.ts';\n",
      'src/queries/store.test.ts': "import { TelemetryStore } from '../run/telemetry/store.ts';\n",
      'src/server/run.ts': "import { SlimeRunModel } from '../run/slime/index.ts';\nimport type { RunModel } from '../run/model.ts';\n",
      'src/commands/trace.ts': "import { readSlimeDump } from '../run/slime/dump.ts';\nimport { openDumpFile } from '../run/open.ts';\n",
      'src/queries/ok.test.ts': "import { writeFileSync } from 'node:fs';\n",
      'src/wire/meta.ts': "import * as z from 'zod';\n",
      'web/views/a.tsx': "import { meta } from '../../src/wire/index.ts';\nimport type { Fleet } from '../../src/queries/fleet.ts';\n",
      'web/views/b.tsx': "import type { Meta } from '../../src/wire/index.ts';\nimport { h } from 'preact';\n",
      'web/views/c.tsx': "const load = () => import('../../src/server/listen.ts');\n",
      'src/collect/hourColumns.ts': "import { encodePersistedParse } from '../run/telemetry/partitionCache.ts';\nimport { HOUR_SECONDS } from '../formats/dashboard/index.ts';\nimport type { RunModel } from '../run/model.ts';\n",
      'src/collect/collector.test.ts': "import { TelemetryStore } from '../run/telemetry/store.ts';\n",
      'src/demo/syntheticRun.ts': "import { DashboardWriter } from '../collect/dashboardWriter.ts';\nimport type { Meta } from '../wire/index.ts';\n",
      'src/collect/service.ts': "const demo = () => import('../demo/demoRun.ts');\n",
      'web/views/d.tsx': "import { decodeFrame } from '../../src/formats/columnFrame.ts';\nimport { pyDumps } from '../../src/formats/pythonJson.ts';\n",
      'src/formats/columnFrame.ts': "import { Buffer } from 'node:buffer';\nimport { createHash } from 'crypto';\n",
    });
    try {
      const found = importViolations(t.root).map((v) => `${v.file} ${v.specifier}`);
      assert.deepEqual(found.sort(), [
        'src/collect/hourColumns.ts ../run/telemetry/partitionCache.ts',
        'src/collect/service.ts ../demo/demoRun.ts',
        'src/commands/trace.ts ../run/slime/dump.ts',
        'src/demo/syntheticRun.ts ../collect/dashboardWriter.ts',
        'src/formats/columnFrame.ts crypto',
        'src/formats/columnFrame.ts node:buffer',
        'src/formats/zip.ts ../run/model.ts',
        'src/queries/metrics.ts fs/promises',
        'src/queries/metrics.ts node:fs',
        'src/queries/store.ts ../run/telemetry/store.ts',
        'src/run/miles/reader.ts ../../queries/rollouts.ts',
        'src/run/miles/reader.ts ../../server/app.ts',
        'src/server/run.ts ../run/slime/index.ts',
        'src/wire/meta.ts zod',
        'web/views/a.tsx ../../src/queries/fleet.ts',
        'web/views/a.tsx ../../src/wire/index.ts',
        'web/views/c.tsx ../../src/server/listen.ts',
        'web/views/d.tsx ../../src/formats/pythonJson.ts',
      ]);
    } finally {
      t.dispose();
    }
  });

  test('multi-line, re-export and type-only imports are read', () => {
    const found = importsOf(
      "import {\n  a,\n  b,\n} from './a.ts';\nexport { c } from './c.ts';\nexport type { D } from './d.ts';\nexport const e = 1;\nimport './side.ts';\n",
    );
    assert.deepEqual(found, [
      { specifier: './a.ts', typeOnly: false },
      { specifier: './c.ts', typeOnly: false },
      { specifier: './d.ts', typeOnly: true },
      { specifier: './side.ts', typeOnly: false },
    ]);
  });
});
