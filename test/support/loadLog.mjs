// A module loader hook for tests: appends the URL of every module the process resolves to the file
// named by RLSIGHT_LOAD_LOG (registered by loadLogRegister.mjs through `node --import`).
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.RLSIGHT_LOAD_LOG) appendFileSync(process.env.RLSIGHT_LOAD_LOG, `${resolved.url}\n`);
  return resolved;
}
