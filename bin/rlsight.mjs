#!/usr/bin/env node
// Runs the TypeScript sources directly; no build step is needed for the CLI and server.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
