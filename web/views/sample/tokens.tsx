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
import { TokenOverview } from './overview.tsx';
import { maskedRuns, peakOf, sliceTokens, windowAround } from './tokenSlice.ts';
import { useWholeSample, type WholeSample } from './wholeSample.ts';
import { maskAt, peakWords, statAt, tokenWords } from './tokenWords.ts';
import { seriesSummary } from '../../components/chartText.ts';

const WINDOWS = [256, 1024, 4096];
/** Without `win=`: the whole sample when it has at most this many tokens (one request), else DEFAULT_WINDOW. */
const WHOLE_UP_TO = 4096;
const DEFAULT_WINDOW = 1024;
const COLOR_PREFERENCE: TokenStat[] = ['lp_diff', 'imp_ratio', 'entropy', 'advantages', 'rollout_log_probs'];

/** `win=`: a window size, `all`, or absent (the default); anything else is said on screen, not ignored. */
type Win = number | 'all' | null;
function winParam(params: URLSearchParams): { win: Win; bad: string | null } {
  const raw = params.get('win');
  if (raw === null || raw === '') return { win: null, bad: null };
  if (raw === 'all') return { win: 'all', bad: null };
  const n = Number(raw);
  return WINDOWS.includes(n) ? { win: n, bad: null } : { win: null, bad: raw };
}

/** How many tokens the window shows once the sample's length is known. */
function windowSize(win: Win, total: number): number {
  if (win === 'all') return Math.max(1, total);
  if (win !== null) return win;
  return total <= WHOLE_UP_TO ? Math.max(1, total) : DEFAULT_WINDOW;
}

/** The request of a window of a sample's tokens: its path and parameters (`start`, `win` from the address). */
function windowRequest(id: number, idx: number, evaluation: boolean, params: URLSearchParams) {
  const start = Math.max(0, Math.floor(numParam(params, 'start') ?? 0));
  const { win, bad } = winParam(params);
  const path = `rollout/${id}/sample/${idx}/tokens`;
  // the default asks WHOLE_UP_TO tokens: a sample that short is then whole in one answer
  const end = win === 'all' ? undefined : start + (win ?? WHOLE_UP_TO);
  const query = { start, end, eval: evaluation };
  return { start, win, bad, path, query, url: apiUrl(path, query), sample: apiUrl(path, { eval: evaluation }) };
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

/** A token to show: the window is moved to it, then it is marked and scrolled to (`n` tells two asks apart). */
export interface Focus {
  pos: number;
  n: number;
}

export function TokensPanel(props: { id: number; idx: number; evaluation: boolean; params: URLSearchParams; onAnswered?: () => void }) {
  const { id, idx, evaluation, params, onAnswered } = props;
  const w = windowRequest(id, idx, evaluation, params);
  const { start } = w;
  // the whole sample once read: every window is then cut from it, with no request
  const [seed, setSeed] = useState<{ key: string; t: Tokens } | null>(null);
  const whole = useWholeSample(w.sample, w.path, evaluation, seed && seed.key === w.sample ? seed.t : null);
  const held = whole.view;
  const heldSize = held ? windowSize(w.win, held.total_len) : 0;
  const covered = !!held && start < held.total_len && held.end >= Math.min(held.total_len, start + heldSize);
  const res = useApi(covered ? null : `${id}|${idx}|${evaluation}|${w.url}`, (signal) => askWindow(w, signal));
  useEffect(() => {
    if (res.data && (!seed || seed.key !== w.sample)) setSeed({ key: w.sample, t: res.data });
  }, [res.data]);
  const answered = covered || res.data !== null || res.error !== null;
  useEffect(() => {
    if (answered) onAnswered?.();
  }, [answered]);
  const [focus, setFocus] = useState<Focus | null>(null);
  const source = covered ? held! : res.data;
  const size = source ? windowSize(w.win, source.total_len) : 0;
  const t = useMemo(() => (source ? sliceTokens(source, start, start + size) : null), [source, start, size]);
  if (!covered && res.error)
    return <ErrorNote error={res.error}>{start > 0 && <button onClick={() => setParams({ start: null })}>back to the first window</button>}</ErrorNote>;
  if (!t) return <Loading what="tokens (the first open of a step decodes its tokens on the server)" />;
  const moveTo = (s: number, pos?: number) => {
    setParams({ start: s > 0 ? s : null });
    if (pos !== undefined) setFocus({ pos, n: (focus?.n ?? 0) + 1 });
  };
  return (
    <>
      {w.bad !== null && (
        <p class="url-note" role="alert" data-testid="win-note">
          win={w.bad} is not a window size (256, 1024, 4096 or all): showing {size === t.total_len ? 'all' : size} tokens.
        </p>
      )}
      <TokenWindow t={t} params={params} size={size} loading={!covered && res.loading} whole={whole} focus={focus} onMove={moveTo} />
    </>
  );
}

/** Integer steps for the position axis (a token position has no halves). */
const POSITION_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 25_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];

interface WindowProps {
  t: Tokens;
  params: URLSearchParams;
  /** Tokens a window holds (◀ ▶ move by this). */
  size: number;
  loading: boolean;
  whole: WholeSample;
  focus: Focus | null;
  onMove: (start: number, focus?: number) => void;
}

function TokenWindow({ t, params, size, loading, whole, focus, onMove }: WindowProps) {
  const available = TOKEN_STATS.filter((s) => Array.isArray(t[s]));
  const fallback = COLOR_PREFERENCE.find((s) => available.includes(s)) ?? available[0] ?? null;
  const colorParam = params.get('color') as TokenStat | null;
  const color = colorParam && available.includes(colorParam) ? colorParam : fallback;
  const chartParam = params.get('chart') as TokenStat | null;
  const chartStat = chartParam && available.includes(chartParam) ? chartParam : color;
  // The fixed, documented scale by default: a healthy sample looks calm, a divergent one loud.
  const scaleMode: ScaleMode = params.get('scale') === 'window' ? 'window' : 'fixed';
  const extent = color ? extentOf(color, t[color], scaleMode) : 1;
  const textRef = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const hot = useRef<HTMLElement | null>(null);
  const [startText, setStartText] = useState(String(t.start));
  useEffect(() => setStartText(String(t.start)), [t.start]);
  const total = t.total_len;
  // The chart spans the whole response once the sample is read whole (the window below is marked on it).
  const full = whole.done ? whole.view : null;
  const chartView = useMemo(() => (full && full.prompt_len < full.total_len ? sliceTokens(full, full.prompt_len, full.total_len) : null), [full]) ?? t;
  const shown = useRef({ start: t.start, end: t.end, size, total });
  shown.current = { start: t.start, end: t.end, size, total };

  const n = t.token_ids.length;

  const chartData = useMemo<uPlot.AlignedData>(() => {
    const v = chartView;
    const base = Math.max(v.start, v.prompt_len);
    const arr = chartStat ? v[chartStat] : null;
    const xs = Array.from({ length: v.end - v.start }, (_, i) => v.start + i);
    return [xs, xs.map((pos) => (arr && pos >= base ? (arr[pos - base] ?? null) : null)) as number[]];
  }, [chartView, chartStat]);
  const masked = useMemo(() => maskedRuns(chartView), [chartView]);

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

  const wholeChart = chartView !== t;
  // the text shows every token: no overview, and no window to mark
  const all = t.start === 0 && t.end >= total;
  // the window marked on a chart of the whole response, unless it is all of it
  const marked = wholeChart && !all;
  const markRef = useRef(marked);
  markRef.current = marked;
  const points = chartView.end - chartView.start;
  const chartOptions = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(
    () => ({
      series: [
        { label: 'position', value: (_u, v) => (v == null ? '—' : String(v)) },
        { label: chartStat ?? '—', stroke: '#ff8a3d', width: points > 2000 ? 1 : 1.5, spanGaps: false, points: { show: points <= 200, size: 4, fill: '#ff8a3d' }, value: (_u, v) => fmtNum(v) },
      ],
      // a flat series (a healthy sample's lp_diff of 0) around its value, not on a 0–100 scale
      scales: { x: { time: false }, y: { range: (_u, min, max) => (min == null || max == null ? [-1, 1] : min === max ? [min - 1, max + 1] : uPlot.rangeNum(min, max, 0.1, true)) } },
      axes: [
        { stroke: CSS.axis, grid: { stroke: CSS.grid }, ticks: { stroke: CSS.grid }, font: '11px system-ui, sans-serif', incrs: POSITION_INCRS },
        { stroke: CSS.axis, grid: { stroke: CSS.grid }, ticks: { stroke: CSS.grid }, font: '11px system-ui, sans-serif', size: 56 },
      ],
      cursor: { drag: { x: true, y: false }, points: { size: 7 } },
      legend: { live: true },
      hooks: {
        drawClear: [
          (u) => {
            // Shade the prompt (no statistics there) and loss-masked runs behind the line; mark the shown window.
            const ctx = u.ctx;
            const { top, height } = u.bbox;
            const px = (pos: number) => u.valToPos(pos, 'x', true);
            const v = chartView;
            ctx.save();
            if (v.prompt_len > v.start) {
              ctx.fillStyle = 'rgba(255,255,255,0.06)';
              const x0 = px(v.start - 0.5);
              ctx.fillRect(x0, top, px(Math.min(v.prompt_len, v.end) - 0.5) - x0, height);
            }
            ctx.fillStyle = 'rgba(155,149,141,0.16)';
            for (const [a, b] of masked) {
              const x0 = px(a - 0.5);
              ctx.fillRect(x0, top, Math.max(1, px(b - 0.5) - x0), height);
            }
            if (markRef.current) {
              const w = shown.current;
              const x0 = px(w.start - 0.5);
              const x1 = px(w.end - 0.5);
              ctx.fillStyle = 'rgba(78,161,255,0.10)';
              ctx.fillRect(x0, top, x1 - x0, height);
              ctx.fillStyle = 'rgba(78,161,255,0.7)';
              ctx.fillRect(Math.round(x0), top, 1, height);
              ctx.fillRect(Math.round(x1), top, 1, height);
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
    [chartView, chartStat, masked],
  );
  // the window moved under a chart of the whole response: draw its mark again
  useEffect(() => {
    if (wholeChart) plot.current?.redraw(false);
  }, [t.start, t.end, marked]);

  /** A click on the chart (not a drag-zoom) at a position outside the window moves the window there. */
  function onChart(u: uPlot) {
    plot.current = u;
    let downX = -1;
    u.over.addEventListener('mousedown', (e) => (downX = e.clientX));
    u.over.addEventListener('click', (e) => {
      if (Math.abs(e.clientX - downX) > 3) return;
      const pos = Math.round(u.posToVal(e.offsetX, 'x'));
      const w = shown.current;
      if (!Number.isFinite(pos) || pos < 0 || pos >= w.total) return;
      if (pos < w.start || pos >= w.end) move.current(windowAround(pos, w.size, w.total), pos);
    });
  }
  const move = useRef(onMove);
  move.current = onMove;

  /** What "peak" found, said in a status line (a screen reader announces it; the outline alone is only seen). */
  const [peakSaid, setPeakSaid] = useState('');
  useEffect(() => setPeakSaid(''), [color, t.rollout_id, t.sample_index, t.evaluation]);

  function jumpToPeak() {
    if (!color) return;
    const mag = (v: number) => Math.abs(SCALES[color].f(v));
    // the whole sample once it is read; until then the tokens shown
    const pos = peakOf(full ?? t, color, mag);
    setPeakSaid(peakWords(full ?? t, color, pos));
    if (pos === null) return;
    if (pos < t.start || pos >= t.end) return onMove(windowAround(pos, size, total), pos);
    showToken(pos);
  }

  function showToken(pos: number) {
    highlight(pos, true);
    const u = plot.current;
    if (u) u.setCursor({ left: u.valToPos(pos, 'x'), top: 10 });
  }
  // a token asked for (the peak, a chart click) once the window holding it is shown
  const shownFocus = useRef(0);
  useEffect(() => {
    if (!focus || focus.n === shownFocus.current || focus.pos < t.start || focus.pos >= t.end) return;
    shownFocus.current = focus.n;
    showToken(focus.pos);
  }, [focus, t]);

  /** The chart's cursor moved by the keyboard: the token there (its text, the charted and the colouring values). */
  function tokenReadout(u: uPlot, idx: number): string {
    const pos = u.data[0][idx]!;
    const words = tokenWords(chartView, pos, [chartStat, color].filter((s): s is TokenStat => s !== null));
    return pos >= t.start && pos < t.end ? words : `${words} (not in the tokens shown: Enter shows it)`;
  }

  /** Enter on the chart shows the token at its cursor, as a click does. */
  function chartKey(e: KeyboardEvent, u: uPlot): boolean {
    const idx = u.cursor.idx;
    if (e.key !== 'Enter' || idx == null) return false;
    const pos = u.data[0][idx]!;
    const w = shown.current;
    if (pos < w.start || pos >= w.end) move.current(windowAround(pos, w.size, w.total), pos);
    return true;
  }
  const chartSummary = useMemo(
    () => (chartStat ? `${chartStat}: ${seriesSummary('position', [{ label: chartStat, x: chartData[0], y: chartData[1] as (number | null)[] }])}` : ''),
    [chartData, chartStat],
  );

  function tokenTip(e: MouseEvent) {
    const el = (e.target as HTMLElement).closest<HTMLElement>('[data-pos]');
    if (!el) return hideTip();
    const pos = Number(el.dataset.pos);
    const i = pos - t.start;
    const lines = [`#${pos}  id=${t.token_ids[i]}  ${JSON.stringify(t.token_text?.[i] ?? '')}`];
    if (pos < t.prompt_len) lines.push('(prompt: no per-token statistics)');
    else {
      for (const s of available) lines.push(`${s.padEnd(18)} ${fmtNum(statAt(t, s, pos))}`);
      const m = maskAt(t, pos);
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
      const masked = !prompt && maskAt(t, pos) === 0;
      const bg = !prompt && !masked && color ? tokenColor(color, statAt(t, color, pos), extent) : undefined;
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
  const peakTitle = color
    ? full
      ? `move the window to the token with the largest |${color}| in the whole sample`
      : `scroll to the token with the largest |${color}| in the tokens shown (the whole sample is still being read)`
    : '';
  return (
    <div class="tokens" data-testid="tokens">
      <div class="token-controls">
        <button disabled={t.start <= 0} onClick={() => onMove(Math.max(0, t.start - size))} title="previous window">
          ◀
        </button>
        <span data-testid="token-range">
          tokens {t.start}–{end} of {total} (prompt {t.prompt_len})
        </span>
        <button disabled={end >= total} onClick={() => onMove(t.start + size)} title="next window">
          ▶
        </button>
        <label>
          window
          <select data-testid="window-size" value={all || !WINDOWS.includes(size) ? 'all' : String(size)} onChange={(e) => setParams({ win: (e.target as HTMLSelectElement).value })}>
            {WINDOWS.filter((w) => w < total || w === size).map((w) => (
              <option key={w} value={String(w)}>
                {w}
              </option>
            ))}
            <option value="all">all {total}</option>
          </select>
        </label>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const s = Math.floor(Number(startText));
            if (Number.isFinite(s) && s >= 0 && s < total) onMove(s);
            else setStartText(String(t.start));
          }}
        >
          <label>
            start <input type="number" min={0} max={total - 1} value={startText} onInput={(e) => setStartText((e.target as HTMLInputElement).value)} />
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
          <button data-testid="peak" title={peakTitle} onClick={jumpToPeak}>
            peak {color}
          </button>
        )}
        <span class="muted peak-said" role="status" data-testid="peak-said">
          {peakSaid}
        </span>
        {(loading || (!whole.done && !whole.error)) && <span class="spinner" title={loading ? 'reading these tokens' : 'reading the whole sample'} />}
      </div>
      {!t.token_text && <NoTokenTexts />}
      {whole.error ? (
        <p class="hint" role="alert" data-testid="overview-error">
          The whole sample could not be read for its overview ({whole.error instanceof Error ? whole.error.message : String(whole.error)}): the chart and the peak cover the tokens shown.
        </p>
      ) : (
        !all &&
        whole.view && <TokenOverview whole={whole.view} done={whole.done} chartStat={chartStat} color={color} extent={extent} start={t.start} end={t.end} win={size} onMove={(s) => onMove(s)} />
      )}
      <div class="token-text" ref={textRef} onMouseMove={tokenTip} onMouseLeave={() => (hideTip(), highlight(null, false))} data-testid="token-text">
        {spans}
      </div>
      <p class="hint token-legend">
        <span class="tok prompt">prompt</span> grey text, no colour · <span class="tok masked">loss-masked</span> hatched and dimmed (not trained on) · hover a token for its id and every value, or focus the chart below and press ←/→
      </p>
      <section class="panel" style={{ marginTop: '10px' }}>
        <header>
          <h3>
            Per-token {chartStat ?? ''} by position
            <span class="muted" style={{ fontWeight: 400 }} data-testid="chart-span">
              {' '}
              · {marked ? `the whole response (${chartView.start}–${chartView.end}), the tokens shown in blue` : wholeChart ? `the whole response (${chartView.start}–${chartView.end})` : all ? 'the whole sample' : `tokens ${t.start}–${t.end}`}
            </span>
          </h3>
          <span class="seg">
            {available.map((s) => (
              <button key={s} class={s === chartStat ? 'active' : ''} onClick={() => setParams({ chart: s })}>
                {s}
              </button>
            ))}
          </span>
        </header>
        {chartStat ? (
          <UPlotChart
            options={chartOptions}
            data={chartData}
            height={200}
            label={`${chartStat} by token position`}
            summary={chartSummary}
            readout={tokenReadout}
            onKey={chartKey}
            keyHint="The token at the cursor is marked in the text; Enter shows a token outside the tokens shown."
            onCreate={onChart}
          />
        ) : (
          <p class="muted">No per-token series in this sample.</p>
        )}
        <p class="hint">
          hover or ←/→ on the focused chart = find the token in the text and read its values · drag = zoom · double-click = reset
          {marked && ' · click outside the blue band = show those tokens'} · shaded: prompt and loss-masked positions
        </p>
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
