// Step diff (`#/diff?a=STEP&b=STEP`): what changed between two steps — distributions overlaid with deltas,
// groups whose outcome flipped, metrics side by side, the samples that moved most. Sample diff
// (`#/diff/sample?a=STEP:SAMPLE&b=STEP:SAMPLE`, or `?step=S&group=G` for a group's best and worst).
import { getJson } from '../../api.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { fmtNum } from '../../format.ts';
import { href, setParams, type Route } from '../../route.ts';
import type { Meta, SampleDiff, StepDiff } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { Histogram, SIDE_COLORS, TokenSeries } from './charts.tsx';

const delta = (d: number | null) => (d === null ? '' : `${d > 0 ? '+' : ''}${fmtNum(d)}`);

function StepPicker({ label, value, steps, param }: { label: string; value: number; steps: number[]; param: string }) {
  return (
    <label class="diff-pick">
      <span class="swatch" style={{ background: label === 'A' ? SIDE_COLORS.a : SIDE_COLORS.b }} /> {label}: step{' '}
      <select value={value} aria-label={`step ${label}`} onChange={(e) => setParams({ [param]: (e.target as HTMLSelectElement).value }, false)}>
        {steps.map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>
    </label>
  );
}

export function DiffView({ meta, route }: { meta: Meta; route: Route }) {
  return route.view === 'sample-diff' ? <SampleDiffView route={route} /> : <StepDiffView meta={meta} route={route} />;
}

function StepDiffView({ meta, route }: { meta: Meta; route: Route }) {
  const steps = meta.rollout_ids.train;
  const p = route.params;
  const num = (k: string, fallback: number | undefined) => (p.get(k) !== null && /^\d+$/.test(p.get(k)!) ? Number(p.get(k)) : fallback);
  const b = num('b', steps.at(-1));
  const a = num('a', steps.at(-2) ?? steps.at(-1));
  const diff = useApi(a !== undefined && b !== undefined ? `${a}|${b}` : null, (signal) => getJson<StepDiff>('rlsight/diff/steps', { a, b }, signal));
  if (a === undefined || b === undefined) return <Empty>No train steps to compare yet.</Empty>;
  const d = diff.data;
  return (
    <section class="diff">
      <div class="diff-head panel">
        <h2 class="view-title">Step diff</h2>
        <StepPicker label="A" value={a} steps={steps} param="a" />
        <StepPicker label="B" value={b} steps={steps} param="b" />
        <span class="muted">histograms show each side’s share of samples per bin; dashed lines are the means</span>
      </div>
      {diff.error ? (
        <ErrorNote error={diff.error} />
      ) : !d ? (
        <Loading what={`steps ${a} and ${b}`} />
      ) : (
        <>
          <div class="diff-grid">
            {d.distributions.map((x) => (
              <div class="panel diff-dist" data-metric={x.metric}>
                <h3>
                  {x.label}{' '}
                  <span class="muted">
                    {fmtNum(x.a.mean)} → {fmtNum(x.b.mean)} <b class={x.delta_mean ? (x.delta_mean > 0 ? 'up' : 'down') : ''}>{delta(x.delta_mean)}</b>
                  </span>
                </h3>
                {x.a.n + x.b.n === 0 ? <p class="muted">no values on either side</p> : <Histogram d={x} />}
              </div>
            ))}
          </div>
          <div class="panel">
            <h3>
              Groups that flipped <span class="muted">({d.flipped.length} of {d.groups_matched} groups present in both steps, matched by prompt)</span>
            </h3>
            {d.flipped.length === 0 ? (
              <p class="muted">No group present in both steps changed outcome (solved: every reward above 0; failed: none; else mixed).</p>
            ) : (
              <table class="diff-table" data-testid="flipped">
                <thead>
                  <tr>
                    <th>prompt</th>
                    <th>A</th>
                    <th>B</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {d.flipped.map((f) => (
                    <tr>
                      <td class="prompt">{f.prompt}</td>
                      <td>
                        <a href={href(`/rollout/${a}`, { group: f.a.group_index })}>group {f.a.group_index}</a> {f.a.outcome} ({fmtNum(f.a.reward_mean)})
                      </td>
                      <td>
                        <a href={href(`/rollout/${b}`, { group: f.b.group_index })}>group {f.b.group_index}</a> {f.b.outcome} ({fmtNum(f.b.reward_mean)})
                      </td>
                      <td>
                        {f.a.best_sample !== null && f.b.worst_sample !== null && (
                          <a href={href('/diff/sample', { a: `${a}:${f.a.best_sample}`, b: `${b}:${f.b.worst_sample}` })}>compare samples</a>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
          <div class="diff-two">
            <div class="panel">
              <h3>Samples that moved most</h3>
              {d.moved.length === 0 && (
                <p class="muted">No prompt appears in both steps, so no sample has a counterpart (pick steps or runs over the same prompts).</p>
              )}
              <table class="diff-table" data-testid="moved" hidden={d.moved.length === 0}>
                <thead>
                  <tr>
                    <th>A sample</th>
                    <th>B sample</th>
                    <th>Δ reward</th>
                    <th>Δ length</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {d.moved.map((m) => (
                    <tr title={m.prompt}>
                      <td>
                        <a href={href(`/rollout/${a}/sample/${m.a.sample_index}`)}>{m.a.sample_index}</a>
                      </td>
                      <td>
                        <a href={href(`/rollout/${b}/sample/${m.b.sample_index}`)}>{m.b.sample_index}</a>
                      </td>
                      <td>{delta(m.delta_reward)}</td>
                      <td>{delta(m.delta_length)}</td>
                      <td>
                        <a href={href('/diff/sample', { a: `${a}:${m.a.sample_index}`, b: `${b}:${m.b.sample_index}` })}>compare</a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="panel">
              <h3>Metrics side by side</h3>
              <table class="diff-table" data-testid="metrics">
                <thead>
                  <tr>
                    <th>key</th>
                    <th>A</th>
                    <th>B</th>
                    <th>Δ</th>
                  </tr>
                </thead>
                <tbody>
                  {d.metrics.map((m) => (
                    <tr>
                      <td class="key">{m.key}</td>
                      <td>{fmtNum(m.a)}</td>
                      <td>{fmtNum(m.b)}</td>
                      <td>{delta(m.delta)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
        </>
      )}
    </section>
  );
}

function SampleDiffView({ route }: { route: Route }) {
  const p = route.params;
  const params = { a: p.get('a'), b: p.get('b'), step: p.get('step'), group: p.get('group'), eval: p.get('eval') === '1' || undefined };
  const key = JSON.stringify(params);
  const diff = useApi(key, (signal) => getJson<SampleDiff>('rlsight/diff/samples', params, signal));
  const seriesName = p.get('series') ?? 'lp_diff';
  if (diff.error) return <ErrorNote error={diff.error} />;
  const d = diff.data;
  if (!d) return <Loading what="samples" />;
  const series = d.series.find((s) => s.name === seriesName) ?? d.series[0];
  const cut = d.first_divergence.char;
  const side = (s: SampleDiff['a'], color: string, which: string) => (
    <div class="panel diff-sample" data-side={which}>
      <h3>
        <span class="swatch" style={{ background: color }} /> <a href={href(`/rollout/${s.step}/sample/${s.sample_index}`, { eval: s.evaluation })}>step {s.step} · sample {s.sample_index}</a>{' '}
        <span class="muted">
          reward {fmtNum(s.reward)} · {s.status ?? '—'} · {s.response_length} tokens
        </span>
      </h3>
      {s.text === null ? (
        <p class="muted">no response text recorded</p>
      ) : (
        <pre class="diff-text">
          {cut === null ? (
            <span class="same">{s.text}</span>
          ) : (
            <>
              <span class="same">{s.text.slice(0, cut)}</span>
              <mark class="diverge" title="first difference">
                {s.text.slice(cut, cut + 1) || '∅'}
              </mark>
              {s.text.slice(cut + 1)}
            </>
          )}
        </pre>
      )}
    </div>
  );
  return (
    <section class="diff">
      <div class="diff-head panel">
        <h2 class="view-title">Sample diff</h2>
        <span class="muted">
          {d.first_divergence.token === null ? 'the responses are token-for-token identical' : `first different token: ${d.first_divergence.token}`}
          {cut !== null ? ` · first different character: ${cut}` : ''}
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
          <TokenSeries a={series.a} b={series.b} divergence={d.first_divergence.token} label={series.name} />
        </div>
      )}
      <div class="diff-two">
        {side(d.a, SIDE_COLORS.a, 'a')}
        {side(d.b, SIDE_COLORS.b, 'b')}
      </div>
    </section>
  );
}
