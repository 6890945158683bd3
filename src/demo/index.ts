// The demo generators: a realistic run for `rlsight demo`, and the large synthetic run benchmarks use.
export { appendDemoStep, generateDemoRun, type AppendedStep, type DemoRunInfo, type DemoRunOptions } from './demoRun.ts';
export { generateSyntheticRun, reusableSyntheticRun, type SyntheticRunInfo, type SyntheticRunOptions } from './syntheticRun.ts';
