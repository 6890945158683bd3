import { resolve } from 'node:path';
import { build as esbuild } from 'esbuild';
import { defineConfig, type Plugin } from 'vite';

/**
 * `rlsight trace` inlines web/dist/trace-standalone.js (the trace explorer alone, as one IIFE) into the page it
 * writes. Every build of the app empties web/dist, so every build writes that script again: a plain
 * `vite build web` (`npm run build:web`) never leaves `rlsight trace` without it. `npm run build:trace`
 * writes the same file alone, with the same options.
 */
function traceStandalone(): Plugin {
  let outDir = '';
  return {
    name: 'rlsight-trace-standalone',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      await esbuild({
        entryPoints: [resolve(import.meta.dirname, 'views', 'trace', 'standalone.ts')],
        bundle: true,
        format: 'iife',
        target: 'es2022',
        minify: true,
        outfile: resolve(outDir, 'trace-standalone.js'),
        logLevel: 'warning',
      });
    },
  };
}

// Relative asset URLs so the app works wherever the server mounts index.html.
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  plugins: [traceStandalone()],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 800 },
});
