// `node --import ./test/support/loadLogRegister.mjs …`: records every module the process loads (see loadLog.mjs).
import { register } from 'node:module';

register('./loadLog.mjs', import.meta.url);
