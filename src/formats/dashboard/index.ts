// The on-disk layout of `{dump-details}/dashboard/`: stream names, hour partitions, records, and
// the encoders/decoders of their lines — one definition for the reader, the demo and the collector.
export * from './layout.ts';
export * from './records.ts';
export * from './encode.ts';
export * from './decode.ts';
export * from './laneCatalog.ts';
