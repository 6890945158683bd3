// Tokens: the decoded window coloured by a chosen per-token series, linked both ways to a metric-vs-position chart.
import uPlot from 'uplot';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { markPainted } from '../../paintMarks.ts';
import { apiUrl, getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { UPlotChart } from '../../components/uplotChart.tsx';
import { fmtNum } from '../../format.ts';
import { meta, refreshMeta } from '../../live.ts';
import { numParam, route, setParams } from '../../route.ts';
import { useStore } from '../../store.ts';
import { CSS } from '../../theme.ts';
import { TOKEN_STATS } from './tokenStats.ts';
import type { TokenStat, TokenView as Tokens } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { extentOf, SCALES, type ScaleMode, scaleGradient, tokenColor } from './tokenColors.ts';

const WINDOWS = [256, 1024, 4096];
const DEFAULT_WINDOW = 1024;
const COLOR_PREFERENCE: TokenStat[] = ['lp_diff', 'imp_ratio', 'entropy', 'advantages', 'rollout_log_probs'];

/** The request of a window of a sample's tokens: its path and parameters (`start`, `win` from the address). */
function windowRequest(id: number, idx: number, evaluation: boolean, params: URLSearchParams) {
  const start = Math.max(0, numParam(params, 'start') ?? 0);
  const win = WINDOWS.includes(numParam(params, 'win') ?? 0) ? numParam(params, 'win')! : DEFAULT_WINDOW;
  const path = `rollout/${id}/sample/${idx}/tokens`;
  const query = { start, end: start + win, eval: evaluation };
  return { start, win, path, query, url: apiUrl(path, query) };
}

/**
 * A page opened on a sample's tokens tab asks that window as the app loads, not after the run header every
 * view waits for: the tokens are most of the first screen's time. The first panel asking the same URL takes it.
 */
let opening: { url: string; answer: Promise<Tokens> } | null = (() => {
  const r = route.get();
  if (r.view !== 'sample' || r.rolloutId === null || r.sampleIndex === null || r.invalid !== null || r.params.get('tab') !== 'tokens') return null;
  const w = windowRequest(r.rolloutId, r.sampleIndex, r.params.get('eval') === '1', r.params);
  const answer = getJson<Tokens>(w.path, w.query);
  answer.catch(() => {}); // its panel reports a failure
  return { url: w.url, answer };
})();

/** The opening request when it is the one asked for (once), else a new one. */
function askWindow(w: ReturnType<typeof windowRequest>, signal: AbortSignal): Promise<Tokens> {
  const early = opening;
  opening = null;
  return early && early.url === w.url ? early.answer : getJson<Tokens>(w.path, w.query, signal);
}

export function TokensPanel(props: { id: number; idx: number; evaluation: boolean; params: URLSearchParams; onAnswered?: () => void }) {
  const { id, idx, evaluation, params, onAnswered } = props;
  const w = windowRequest(id, idx, evaluation, params);
  const { start, win } = w;
  const res = useApi(`${id}|${idx}|${evaluation}|${start}|${win}|${w.url}`, (signal) => askWindow(w, signal));
  const answered = res.data !== null || res.error !== null;
  useEffect(() => {
    if (answered) onAnswered?.();
  }, [answered]);
  if (res.error) return <ErrorNote error={res.error}>{start > 0 && <button onClick={() => setParams({ start: null })}>back to the first window</button>}</ErrorNote>;
  if (!res.data) return <Loading what="tokens (the first open of a step decodes its tokens on the server)" />;
  return <TokenWindow t={res.data} params={params} win={win} loading={res.loading} />;
}

function TokenWindow({ t, params, win, loading }: { t: Tokens; params: URLSearchParams; win: number; loading: boolean }) {
  const available = TOKEN_STATS.filter((s) => Array.isArray(t[s]));
  const fallback = COLOR_PREFERENCE.find((s) => available.includes(s)) ?? available[0] ?? null;
  const colorParam = params.get('color') as TokenStat | null;
  const color = colorParam && available.includes(colorParam) ? colorParam : fallback;
  const chartParam = params.get('chart') as TokenStat | null;
  const chartStat = chartParam && available.includes(chartParam) ? chartParam : color;
  const statBase = Math.max(t.start, t.prompt_len);
  // The fixed, documented scale by default: a healthy sample looks calm, a divergent one loud.
  const scaleMode: ScaleMode = params.get('scale') === 'window' ? 'window' : 'fixed';
  const extent = color ? extentOf(color, t[color], scaleMode) : 1;
  const textRef = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const hot = useRef<HTMLElement | null>(null);
  const [startText, setStartText] = useState(String(t.start));

  const n = t.token_ids.length;
  const statAt = (s: TokenStat, pos: number): number | null => {
    const arr = t[s];
    const i = pos - statBase;
    return arr && i >= 0 && i < arr.length ? (arr[i] ?? null) : null;
  };
  const maskAt = (pos: number): number | null => {
    const i = pos - statBase;
    return t.loss_mask && i >= 0 && i < t.loss_mask.length ? t.loss_mask[i]! : null;
  };

  const chartData = useMemo<uPlot.AlignedData>(() => {
    const xs = Array.from({ length: n }, (_, i) => t.start + i);
    return [xs, xs.map((pos) => (chartStat ? statAt(chartStat, pos) : null)) as number[]];
  }, [t, chartStat]);

  function highlight(pos: number | null, scroll: boolean) {
    hot.current?.classList.remove('hot');
    hot.current = null;
    if (pos === null) return;
    const el = textRef.current?.querySelector<HTMLElement>(`[data-pos="${pos}"]`);
    if (!el) return;
    el.classList.add('hot');
    hot.current = el;
    if (scroll) el.scrollIntoView({ block: 'nearest' });
  }

  const chartOptions = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(
    () => ({
      series: [
        { label: 'position', value: (_u, v) => (v == null ? '—' : String(v)) },
        { label: chartStat ?? '—', stroke: '#ff8a3d', width: 1.5, spanGaps: false, points: { show: n <= 200, size: 4, fill: '#ff8a3d' }, value: (_u, v) => fmtNum(v) },
      ],
      scales: { x: { time: false } },
      axes: [
        { stroke: CSS.axis, grid: { stroke: CSS.grid }, ticks: { stroke: CSS.grid }, font: '11px system-ui, sans-serif' },
        { stroke: CSS.axis, grid: { stroke: CSS.grid }, ticks: { stroke: CSS.grid }, font: '11px system-ui, sans-serif', size: 56 },
      ],
      cursor: { drag: { x: true, y: false }, points: { size: 7 } },
      legend: { live: true },
      hooks: {
        drawClear: [
          (u) => {
            // Shade the prompt (no statistics there) and loss-masked runs behind the line.
            const ctx = u.ctx;
            const { top, height } = u.bbox;
            const px = (pos: number) => u.valToPos(pos, 'x', true);
            ctx.save();
            if (t.prompt_len > t.start) {
              ctx.fillStyle = 'rgba(255,255,255,0.06)';
              const x0 = px(t.start - 0.5);
              ctx.fillRect(x0, top, px(Math.min(t.prompt_len, t.end) - 0.5) - x0, height);
            }
            ctx.fillStyle = 'rgba(155,149,141,0.10)';
            for (let pos = statBase; pos < t.end; pos++) {
              if (maskAt(pos) === 0) {
                const x0 = px(pos - 0.5);
                ctx.fillRect(x0, top, px(pos + 0.5) - x0, height);
              }
            }
            ctx.restore();
          },
        ],
        setCursor: [
          (u) => {
            const i = u.cursor.idx;
            highlight(i == null ? null : (u.data[0][i] ?? null), true);
          },
        ],
      },
    }),
    [t, chartStat],
  );

  function jumpToPeak() {
    const arr = color ? t[color] : null;
    if (!color || !arr) return;
    const f = SCALES[color].f;
    let best = -1;
    let bestV = -Infinity;
    arr.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      const s = Math.abs(f(v));
      if (s > bestV) {
        bestV = s;
        best = i;
      }
    });
    if (best < 0) return;
    const pos = statBase + best;
    highlight(pos, true);
    const u = plot.current;
    if (u) u.setCursor({ left: u.valToPos(pos, 'x'), top: 10 });
  }

  function tokenTip(e: MouseEvent) {
    const el = (e.target as HTMLElement).closest<HTMLElement>('[data-pos]');
    if (!el) return hideTip();
    const pos = Number(el.dataset.pos);
    const i = pos - t.start;
    const lines = [`#${pos}  id=${t.token_ids[i]}  ${JSON.stringify(t.token_text?.[i] ?? '')}`];
    if (pos < t.prompt_len) lines.push('(prompt: no per-token statistics)');
    else {
      for (const s of available) lines.push(`${s.padEnd(18)} ${fmtNum(statAt(s, pos))}`);
      const m = maskAt(pos);
      if (m !== null) lines.push(`${'loss_mask'.padEnd(18)} ${m}${m === 0 ? '  (not trained on)' : ''}`);
    }
    showTip(e.clientX, e.clientY, lines);
    highlight(pos, false);
    const u = plot.current;
    if (u) u.setCursor({ left: u.valToPos(pos, 'x'), top: 10 });
  }

  const spans = useMemo(() => {
    const out: preact.JSX.Element[] = [];
    for (let i = 0; i < n; i++) {
      const pos = t.start + i;
      const text = t.token_text ? t.token_text[i]! : `·${t.token_ids[i]}`;
      const prompt = pos < t.prompt_len;
      const masked = !prompt && maskAt(pos) === 0;
      const bg = !prompt && !masked && color ? tokenColor(color, statAt(color, pos), extent) : undefined;
      out.push(
        <span key={pos} data-pos={pos} class={`tok${prompt ? ' prompt' : ''}${masked ? ' masked' : ''}`} style={bg ? { background: bg } : undefined}>
          {text.replace(/\n/g, '⏎\n')}
        </span>,
      );
    }
    return out;
  }, [t, color, extent]);

  useEffect(() => markPainted('tokens'), []);
  // `at=POS` (a search hit) marks that token and scrolls to it (its own class: hovering moves `hot`).
  const at = numParam(params, 'at');
  useEffect(() => {
    const el = at === null ? null : textRef.current?.querySelector<HTMLElement>(`[data-pos="${at}"]`);
    if (!el) return;
    el.classList.add('found');
    el.scrollIntoView({ block: 'center' });
    return () => el.classList.remove('found');
  }, [t, at]);
  const end = t.end;
  return (
    <div class="tokens" data-testid="tokens">
      <div class="token-controls">
        <button disabled={t.start <= 0} onClick={() => setParams({ start: Math.max(0, t.start - win) || null })} title="previous window">
          ◀
        </button>
        <span data-testid="token-range">
          tokens {t.start}–{end} of {t.total_len} (prompt {t.prompt_len})
        </span>
        <button disabled={end >= t.total_len} onClick={() => setParams({ start: t.start + win })} title="next window">
          ▶
        </button>
        <label>
          window
          <select value={win} onChange={(e) => setParams({ win: Number((e.target as HTMLSelectElement).value) })}>
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                {w}
              </option>
            ))}
          </select>
        </label>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const s = Math.floor(Number(startText));
            if (Number.isFinite(s) && s >= 0 && s < t.total_len) setParams({ start: s || null });
            else setStartText(String(t.start));
          }}
        >
          <label>
            start <input type="number" min={0} max={t.total_len - 1} value={startText} onInput={(e) => setStartText((e.target as HTMLInputElement).value)} />
          </label>
        </form>
        <label>
          colour by
          <select data-testid="color-by" value={color ?? ''} onChange={(e) => setParams({ color: (e.target as HTMLSelectElement).value })}>
            {available.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        {color && (
          <span data-testid="color-scale">
            <i class="scale-bar" style={{ background: scaleGradient(color) }} /> {SCALES[color].describe(extent)}{' '}
            <select
              aria-label="colour scale"
              value={scaleMode}
              data-testid="scale-mode"
              title="fixed: the same documented range for every sample (comparable; calm when healthy) · stretched: the shown tokens' own extent (small effects visible)"
              onChange={(e) => setParams({ scale: (e.target as HTMLSelectElement).value === 'window' ? 'window' : null })}
            >
              <option value="fixed">fixed scale</option>
              <option value="window">stretched to this window</option>
            </select>
          </span>
        )}
        {color && (
          <button title={`scroll to the token with the largest |${color}| in this window`} onClick={jumpToPeak}>
            peak {color}
          </button>
        )}
        {loading && <span class="spinner" />}
      </div>
      {!t.token_text && <NoTokenTexts />}
      <div class="token-text" ref={textRef} onMouseMove={tokenTip} onMouseLeave={() => (hideTip(), highlight(null, false))} data-testid="token-text">
        {spans}
      </div>
      <p class="hint">
        <span class="tok prompt">prompt</span> plain · <span class="tok masked">loss-masked</span> dimmed · hover a token for its id and every value
      </p>
      <section class="panel" style={{ marginTop: '10px' }}>
        <header>
          <h3>Per-token {chartStat ?? ''} by position</h3>
          <span class="seg">
            {available.map((s) => (
              <button key={s} class={s === chartStat ? 'active' : ''} onClick={() => setParams({ chart: s })}>
                {s}
              </button>
            ))}
          </span>
        </header>
        {chartStat ? (
          <UPlotChart options={chartOptions} data={chartData} height={200} label={`${chartStat} by token position`} onCreate={(u) => (plot.current = u)} />
        ) : (
          <p class="muted">No per-token series in this sample.</p>
        )}
        <p class="hint">hover = find the token in the text · drag = zoom · double-click = reset · shaded: prompt and loss-masked positions</p>
      </section>
    </div>
  );
}

/** Why the tokens have no text: the run has no tokenizer, or its tokenizer could not be read (the run's warnings say why). */
function NoTokenTexts() {
  const m = useStore(meta);
  const problem = m?.warnings?.find((w) => /(^|\/)tokenizer\.json: /.test(w));
  const has = m?.capabilities.has_tokenizer !== false;
  // The server notes a damaged tokenizer as it reads the tokens, maybe after the run's meta was asked: ask it again.
  useEffect(() => {
    if (has && !problem) void refreshMeta();
  }, []);
  if (problem)
    return (
      <p class="url-note" role="alert" data-testid="tokenizer-note">
        The run's tokenizer could not be read ({problem.replace(/: token texts skipped$/, '')}): token ids are shown instead of text.
      </p>
    );
  return (
    <p class="hint" data-testid="tokenizer-note">
      {has ? "The run's tokenizer gave no token texts" : 'No tokenizer in this run'}: token ids are shown instead of text.
    </p>
  );
}
