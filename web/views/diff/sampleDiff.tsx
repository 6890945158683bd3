// The sample diff: two responses (of one step, two steps or two runs) side by side, their tokens aligned by
// content — stretches both share, stretches only A has (deleted), only B has (inserted) — the first
// divergence marked, and a per-token series of both over the aligned columns.
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { fmtNum } from '../../format.ts';
import { setParams, type Route } from '../../route.ts';
import type { AlignedStretch, Meta, RunListing, SampleDiff, SampleSide } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { type SideColors, sideColors, TokenSeries } from './charts.tsx';
import { sampleHref } from './links.ts';
import { useServedRuns, useSteps } from './servedRuns.ts';
import { runLabel, shownRunId } from '../../runs.ts';

const PASSED = ['a', 'b', 'step', 'group', 'eval', 'eval_a', 'eval_b', 'run_a', 'run_b'] as const;

type Which = 'a' | 'b';

/** One side's own stretches (a side has no tokens in the other side's insertions). */
function ownStretches(stretches: readonly AlignedStretch[], which: Which): { kind: AlignedStretch['kind']; start: number; end: number }[] {
  return stretches
    .map((s) => ({ kind: s.kind, start: which === 'a' ? s.a_start : s.b_start, end: which === 'a' ? s.a_end : s.b_end }))
    .filter((s) => s.end > s.start);
}

/** The response as its tokens, each stretch shaded by kind, the first differing token marked. */
function AlignedText({ tokens, stretches, which, divergence }: { tokens: string[]; stretches: readonly AlignedStretch[]; which: Which; divergence: number | null }) {
  const parts = ownStretches(stretches, which).flatMap((s) => {
    const text = (from: number, to: number) => tokens.slice(from, to).join('');
    if (divergence === null || divergence < s.start || divergence >= s.end)
      return [
        <span class={`st-${s.kind}`} data-kind={s.kind}>
          {text(s.start, s.end)}
        </span>,
      ];
    return [
      divergence > s.start && <span class={`st-${s.kind}`} data-kind={s.kind}>{text(s.start, divergence)}</span>,
      <mark class="diverge" title="first different token">
        {text(divergence, divergence + 1) || '∅'}
      </mark>,
      divergence + 1 < s.end && <span class={`st-${s.kind}`} data-kind={s.kind}>{text(divergence + 1, s.end)}</span>,
    ];
  });
  // The shorter response ends where the other goes on: mark its end.
  const ended = divergence !== null && divergence >= tokens.length;
  return (
    <pre class="diff-text aligned">
      {parts}
      {ended && (
        <mark class="diverge" title="this response ends here; the other goes on">
          ∅
        </mark>
      )}
    </pre>
  );
}

/** The recorded text with the first differing character marked (when the tokens were not decoded). */
function PlainText({ text, cut }: { text: string; cut: number | null }) {
  return (
    <pre class="diff-text">
      {cut === null ? (
        <span class="same">{text}</span>
      ) : (
        <>
          <span class="same">{text.slice(0, cut)}</span>
          <mark class="diverge" title="first difference">
            {text.slice(cut, cut + 1) || '∅'}
          </mark>
          {text.slice(cut + 1)}
        </>
      )}
    </pre>
  );
}

/** STEP:SAMPLE from the URL, or null. */
function sampleParam(v: string | null): [number, number] | null {
  return v !== null && /^\d+:\d+$/.test(v) ? (v.split(':').map(Number) as [number, number]) : null;
}

interface SideChoice {
  run: string | null;
  step: number;
  sample: number;
  evaluation: boolean;
}

/** One side's run (on a server holding several), step and sample index. */
function SamplePicker(props: { which: Which; served: RunListing[] | null; meta: Meta; side: SideChoice; colors: SideColors; choose: (patch: Partial<SideChoice>) => void }) {
  const { which, served, meta, side, colors, choose } = props;
  const label = which.toUpperCase();
  const listed = useSteps(served, side.run, meta, side.evaluation).steps ?? [];
  const steps = listed.includes(side.step) ? listed : [...listed, side.step].sort((x, y) => x - y);
  return (
    <span class="diff-pick" data-side={which}>
      <span class="swatch" style={{ background: colors[which] }} data-testid={`swatch-${which}`} /> {label}:{' '}
      {served && (
        <>
          run{' '}
          <select value={side.run ?? ''} aria-label={`run ${label}`} data-testid={`run-${which}`} onChange={(e) => choose({ run: (e.target as HTMLSelectElement).value })}>
            {served.map((r) => (
              <option value={r.id}>{runLabel(r)}</option>
            ))}
          </select>{' '}
        </>
      )}
      {side.evaluation ? 'eval step' : 'step'}{' '}
      <select value={side.step} aria-label={`step ${label}`} data-testid={`step-${which}`} onChange={(e) => choose({ step: Number((e.target as HTMLSelectElement).value) })}>
        {steps.map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>{' '}
      sample{' '}
      <input
        type="number"
        min={0}
        class="diff-sample-index"
        value={side.sample}
        aria-label={`sample ${label}`}
        data-testid={`sample-${which}`}
        onChange={(e) => {
          const v = (e.target as HTMLInputElement).value;
          if (/^\d+$/.test(v)) choose({ sample: Number(v) });
        }}
      />
    </span>
  );
}

export function SampleDiffView({ meta, route }: { meta: Meta; route: Route }) {
  const served = useServedRuns();
  const p = route.params;
  const params = Object.fromEntries(PASSED.map((k) => [k, p.get(k)]));
  const key = JSON.stringify(params);
  const diff = useApi(key, (signal) => getJson<SampleDiff>('rlsight/diff/samples', params, signal));
  const seriesName = p.get('series') ?? 'lp_diff';
  const d = diff.data;
  const primary = shownRunId(served);
  const runOf = (which: Which) => (served ? (which === 'a' ? p.get('run_a') ?? primary : p.get('run_b') ?? p.get('run_a') ?? primary) : null);
  const across = served !== null && runOf('a') !== runOf('b');
  const colors = sideColors(served, runOf('a'), runOf('b'));

  // The sides as chosen: the URL's STEP:SAMPLE, else (a group's best and worst) the answer's.
  const evalOf = (which: Which) => (p.get(`eval_${which}`) ?? p.get('eval')) === '1' || p.get(`eval_${which}`) === 'true';
  const chosen = (which: Which): SideChoice | null => {
    const at = sampleParam(p.get(which)) ?? (d ? [d[which].step, d[which].sample_index] : null);
    return at && { run: runOf(which), step: at[0], sample: at[1], evaluation: evalOf(which) };
  };
  const sides = { a: chosen('a'), b: chosen('b') };
  const choose = (which: Which) => (patch: Partial<SideChoice>) => {
    const next = { ...sides, [which]: { ...sides[which]!, ...patch } };
    setParams(
      {
        a: `${next.a!.step}:${next.a!.sample}`,
        b: `${next.b!.step}:${next.b!.sample}`,
        // the header names side A's run
        run: next.a!.run,
        run_a: next.a!.run,
        run_b: next.b!.run !== next.a!.run ? next.b!.run : null,
        eval: null,
        eval_a: next.a!.evaluation,
        eval_b: next.b!.evaluation,
        step: null,
        group: null,
      },
      false,
    );
  };
  const pickers = sides.a && sides.b && (
    <div class="diff-pickers">
      <SamplePicker which="a" served={served} meta={meta} side={sides.a} colors={colors} choose={choose('a')} />
      <SamplePicker which="b" served={served} meta={meta} side={sides.b} colors={colors} choose={choose('b')} />
    </div>
  );
  if (!d)
    return (
      <section class="diff">
        <div class="diff-head panel">
          <h2 class="view-title">Sample diff</h2>
          {pickers}
        </div>
        {diff.error ? <ErrorNote error={diff.error} /> : <Loading what="samples" />}
      </section>
    );
  const series = d.series.find((s) => s.name === seriesName) ?? d.series[0];
  const al = d.alignment;

  const side = (s: SampleSide, which: Which) => {
    const run = runOf(which);
    return (
      <div class="panel diff-sample" data-side={which}>
        <h3>
          <span class="swatch" style={{ background: colors[which] }} />{' '}
          <a href={sampleHref({ run }, s.step, s.sample_index, s.evaluation)} data-testid={`open-${which}`}>
            {served ? `${run} · ` : ''}
            {s.evaluation ? 'eval ' : ''}step {s.step} · sample {s.sample_index}
          </a>{' '}
          <span class="muted">
            reward {fmtNum(s.reward)} · {s.status ?? '—'} · {s.response_length} tokens
          </span>
        </h3>
        {s.token_text ? (
          <AlignedText tokens={s.token_text} stretches={al.stretches} which={which} divergence={d.first_divergence.token} />
        ) : s.text === null ? (
          <p class="muted">no response text recorded</p>
        ) : (
          <PlainText text={s.text} cut={d.first_divergence.char} />
        )}
      </div>
    );
  };
  return (
    <section class="diff" style={{ '--side-a': colors.a, '--side-b': colors.b }}>
      <div class="diff-head panel">
        <h2 class="view-title">Sample diff{across ? ' across runs' : ''}</h2>
        {pickers}
        {p.get('group') !== null && p.get('a') === null && (
          <span data-testid="best-worst">
            group {p.get('group')}:{' '}
            {d.a.reward === d.b.reward
              ? `every sample scored the same (reward ${fmtNum(d.a.reward)}): A and B are its first and last`
              : `A is its best sample (reward ${fmtNum(d.a.reward)}), B its worst (reward ${fmtNum(d.b.reward)})`}
          </span>
        )}
        <span class="muted">
          {d.first_divergence.token === null ? 'the responses are token-for-token identical' : `first different token: ${d.first_divergence.token}`}
          {d.first_divergence.char !== null ? ` · first different character: ${d.first_divergence.char}` : ''}
        </span>
        <span class="alignment" data-testid="alignment" data-method={al.method}>
          {al.fell_back ? (
            <b class="fell-back" title="past the edit cap the alignment keeps only what both responses begin and end with">
              more than {al.edit_cap.toLocaleString()} edits apart: only the common prefix and suffix are aligned
            </b>
          ) : (
            'aligned by token ids:'
          )}{' '}
          <span class="st-same">{al.matched} matched</span> · <span class="st-deleted">{al.deleted} only in A</span> · <span class="st-inserted">{al.inserted} only in B</span>
        </span>
        {d.series.length > 0 && (
          <label>
            series{' '}
            <select value={series?.name} aria-label="per-token series" onChange={(e) => setParams({ series: (e.target as HTMLSelectElement).value })}>
              {d.series.map((s) => (
                <option value={s.name}>{s.name}</option>
              ))}
            </select>
          </label>
        )}
      </div>
      {series && (
        <div class="panel">
          <TokenSeries a={series.a} b={series.b} divergence={d.first_divergence.token} stretches={al.stretches} label={series.name} colors={colors} />
        </div>
      )}
      <div class="diff-two">
        {side(d.a, 'a')}
        {side(d.b, 'b')}
      </div>
    </section>
  );
}
