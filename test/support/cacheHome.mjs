// Loaded before every test file (`npm test`): servers the tests start without --cache-dir keep their
// default caches in a folder of the test run's own, removed when it exits, never in the user's cache directory
// (even when the user's shell sets RLSIGHT_CACHE_DIR). Child processes inherit the folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

if (!process.env.RLSIGHT_TEST_CACHE_DIR) {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-test-cache-'));
  process.env.RLSIGHT_TEST_CACHE_DIR = dir;
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
}
process.env.RLSIGHT_CACHE_DIR = process.env.RLSIGHT_TEST_CACHE_DIR;
