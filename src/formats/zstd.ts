// zstd for Parquet pages (WebAssembly: Node 20 has no zstd of its own), loaded once per process.
let loading: Promise<(input: Uint8Array) => Uint8Array> | null = null;

export function zstdCompressor(): Promise<(input: Uint8Array) => Uint8Array> {
  loading ??= (async () => {
    const { Zstd } = await import('@hpcc-js/wasm-zstd');
    const z = await Zstd.load();
    return (input: Uint8Array) => z.compress(input);
  })();
  return loading;
}
