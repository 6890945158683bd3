// The collector's defaults and its usage text (kept apart so `rlsight --help` loads nothing else).

/** miles' collector caps each stream at this many records. */
export const DEFAULT_BUFFER_CAP = 500_000;
/** A batch above this is refused with 413 (a producer batch is a few KiB). */
export const DEFAULT_MAX_BATCH_BYTES = 8 << 20;

export const COLLECT_USAGE = `collect options:
  --listen HOST:PORT            where producers connect (default 127.0.0.1:7789; 0.0.0.0:7789 for a cluster)
  --advertise HOST              the host written to collector.json (default: listen host, or this node's IPv4)
  --flush-interval S            seconds between disk flushes (default 5)
  --run-name NAME               meta.json run name (default: the existing one, else rlsight-run)
  --buffer-cap N                records held per stream while the disk is unavailable (default ${DEFAULT_BUFFER_CAP})
  --max-batch-bytes N           larger batches are refused with 413 (default ${DEFAULT_MAX_BATCH_BYTES})
  --sglang-router URL           scrape SGLang engine metrics through this router
  --sglang-scrape-mode M        auto|router|direct (default auto: the reported engines' /metrics, the router while none is reported)
  --sglang-scrape-interval S    seconds between scrapes (default 2)
  --sglang-metrics a,b,...      replace the scraped metric whitelist
  --tensorboard LOGDIR          record the trainer's TensorBoard scalars as metrics while the event files grow`;
