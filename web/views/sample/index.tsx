// Sample view: one trajectory — header with group navigation, its lifecycle, then Conversation and Tokens tabs.
import { useEffect, useState } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { Downloads } from '../../components/downloads.tsx';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { fmtNum } from '../../format.ts';
import { useKeys } from '../../keyboard.ts';
import { href, navigate, type Route } from '../../route.ts';
import type { Conversation as Conv, Meta, RolloutTable as Table, TableRow as Row, Trajectories } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { LIFECYCLE_COLORS } from '../../theme.ts';
import { Conversation } from './conversation.tsx';
import { LifecycleStrip, lifecycleWindow } from './lifecycle.tsx';
import { TokensPanel } from './tokens.tsx';
import { RunHoldings, useRunFacts } from '../../components/runHoldings.tsx';
import { noDumpsText } from '../../runFacts.ts';

export function SampleView({ meta, route }: { meta: Meta; route: Route }) {
  // `run=ID` (the app's run choice) already sends every request to /api/runs/ID/.
  const runId = route.params.get('run');
  const facts = useRunFacts(meta);
  const evaluation = route.params.get('eval') === '1';
  const ids = evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train;
  const id = route.rolloutId ?? ids.at(-1) ?? null;
  if (route.invalid) return <ErrorNote error={new Error(route.invalid)} />;
  if (id === null)
    return (
      <Empty>
        {noDumpsText(facts, 'The Sample view')}
        <br />
        <RunHoldings facts={facts} here="rollout" />
      </Empty>
    );
  return <Sample meta={meta} route={route} id={id} evaluation={evaluation} runId={runId} />;
}

function Sample({ meta, route, id, evaluation, runId }: { meta: Meta; route: Route; id: number; evaluation: boolean; runId: string | null }) {
  const p = route.params;
  const idx = route.sampleIndex;
  const tab = p.get('tab') === 'tokens' ? 'tokens' : 'conversation';
  const known = (evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train).includes(id);
  const step = `${runId}|${id}|${evaluation}`;
  // On the tokens tab the step's summary (every sample of the step, costly the first time) is asked once the
  // tokens have answered: the tokens come first, the header and group navigation after.
  const [tokensAnsweredFor, setTokensAnsweredFor] = useState<string | null>(null);
  const summaryWanted = idx === null || tab !== 'tokens' || tokensAnsweredFor === step;
  const summary = useApi(known && summaryWanted ? step : null, (signal) => getJson<Table>(`rollout/${id}/summary`, { eval: evaluation }, signal));
  // the step's groups: the sample's group reward mean and std, from which its advantage follows (asked once the
  // summary they are made from has answered: a step whose dump cannot be read has none)
  const groups = useApi(known && summary.data ? step : null, (signal) => getJson<Table>(`rollout/${id}/groups`, { eval: evaluation }, signal).catch(() => null));
  const rows = summary.data?.rows ?? [];
  const order = rows.map((r) => Number(r.sample_index));
  const row = rows.find((r) => Number(r.sample_index) === idx);
  // Ask for a sample's details only once the step's summary confirms it exists (no 404 noise); a step whose dump
  // cannot be read still has its conversation, tokens and lifecycle in their own files, so they are asked then too.
  const exists = idx !== null && (!!row || !!summary.error);

  // rlsight's route answers 200 with `recorded: false` for a sample without a conversation (no 404 in the console).
  const conv = useApi(exists && idx !== null ? `${runId}|${id}|${idx}|${evaluation}` : null, (signal) =>
    getJson<Conv>(`rlsight/rollout/${id}/sample/${idx}/messages`, { eval: evaluation }, signal).then((c) => (c.recorded === false ? null : c)),
  );
  const traj = useApi(!evaluation && exists && idx !== null ? `${runId}|${id}|${idx}` : null, (signal) =>
    getJson<Trajectories>(`rollout/${id}/trajectories`, { sample_index: idx }, signal).catch(() => null),
  );

  const keep = (q: URLSearchParams) => {
    const o = new URLSearchParams();
    for (const k of ['run', 'eval', 'tab', 'color', 'scale', 'chart', 'win']) if (q.get(k)) o.set(k, q.get(k)!);
    return o;
  };
  const go = (n: number) => navigate(href(`/rollout/${id}/sample/${n}`, keep(p)));
  const pos = idx === null ? -1 : order.indexOf(idx);
  useKeys({
    next: () => pos >= 0 && pos < order.length - 1 && go(order[pos + 1]!),
    prev: () => pos > 0 && go(order[pos - 1]!),
  });

  const firstHref = idx === null && order.length ? href(`/rollout/${id}/sample/${order[0]}`, keep(p)) : null;
  // `…/sample` alone means "the step's first sample": say so in the URL, replacing this entry.
  useEffect(() => {
    if (firstHref) navigate(firstHref, true);
  }, [firstHref]);

  if (!known)
    return (
      <Empty>
        {evaluation ? 'Eval step' : 'Step'} {id} is not recorded in this run. <a href={href('/rollout')}>Open the latest step</a>.
      </Empty>
    );
  if (idx === null) {
    if (summary.error) return <ErrorNote error={summary.error} />;
    if (!summary.data) return <Loading what="samples" />;
    if (!order.length) return <Empty>Step {id} has no samples.</Empty>;
    return <Loading what="sample" />;
  }
  if (summary.data && !row)
    return (
      <Empty>
        Sample {idx} is not in {evaluation ? 'eval ' : ''}step {id}. Sample indices are global across the run; this step holds{' '}
        {order.length ? `${Math.min(...order)}–${Math.max(...order)}` : 'no samples'}.{' '}
        {order.length > 0 && <a href={href(`/rollout/${id}/sample/${order[0]}`, keep(p))}>Open sample {order[0]}</a>}
      </Empty>
    );

  const group = row?.group_index ?? conv.data?.group_index;
  const siblings = rows.filter((r) => r.group_index === group).map((r) => Number(r.sample_index));
  const gpos = siblings.indexOf(idx);
  const tabHref = (t: string) => {
    const q = new URLSearchParams(p);
    if (t === 'conversation') q.delete('tab');
    else q.set('tab', t);
    return href(`/rollout/${id}/sample/${idx}`, q);
  };
  const reward = row?.raw_reward ?? row?.reward ?? conv.data?.reward ?? null;
  const groupRow = group === undefined || group === null ? undefined : groups.data?.rows.find((g) => g.group_index === group);
  const status = row?.status ?? conv.data?.status;
  const lane = traj.data?.lanes.find((l) => l.sample_index === idx);

  return (
    <div class="sample">
      <div class="sample-head panel">
        {runId ? (
          <a class="chip" data-testid="sample-run" href={href(`/rollout/${id}`, { eval: evaluation, run: runId })} title="a sample of another run this server holds: back to its step">
            ← run {runId} · {evaluation ? 'eval ' : ''}step {id}
          </a>
        ) : (
          <a href={href(`/rollout/${id}`, { eval: evaluation })}>← {evaluation ? 'eval ' : ''}step {id}</a>
        )}
        <h2 data-testid="sample-title">sample {idx}</h2>
        {status != null && <span class={`chip ${status === 'completed' ? 'good' : status === 'aborted' || status === 'failed' ? 'bad' : ''}`}>{String(status)}</span>}
        {(row || reward != null) && <span class="chip">reward {fmtNum(reward)}</span>}
        {row && <Advantage row={row} reward={typeof reward === 'number' ? reward : null} group={groupRow} />}
        {row && (
          <>
            <span class="chip">{fmtNum(row.response_length)} response tokens</span>
            {row.mixed_version === true && <span class="chip bad">spans 2+ weight versions</span>}
            {/* the trainer's flag, unless the rollout's status already says it */}
            {row.truncated === true && row.status !== 'truncated' && <span class="chip bad">truncated</span>}
            {row.mean_abs_lp_diff != null && <span class="chip">mean |lp diff| {fmtNum(row.mean_abs_lp_diff)}</span>}
          </>
        )}
        {/* the export and the group's diff read the step's dump */}
        {!summary.error && <Downloads what="sample" path={`rlsight/export/sample/${id}/${idx}`} formats={['json']} params={{ eval: evaluation || undefined }} />}
        {!summary.error &&
          summary.data &&
          group !== undefined &&
          group !== null &&
          (siblings.length >= 2 ? (
            <a class="downloads" data-testid="best-vs-worst" href={href('/diff/sample', { step: id, group: String(group), eval: evaluation, run_a: runId })} title="this group's best and worst samples side by side">
              ⇄ best vs worst
            </a>
          ) : (
            <span class="downloads disabled" data-testid="best-vs-worst" aria-disabled="true" title={`group ${group} holds this sample alone (its prompt was sampled once): there is no other sample to compare it with`}>
              ⇄ best vs worst
            </span>
          ))}
        <span style={{ marginLeft: 'auto' }} class="seg">
          <button disabled={gpos <= 0} onClick={() => go(siblings[gpos - 1]!)}>
            ◀ prev in group
          </button>
          <button disabled>
            group {group ?? '—'}
            {summary.error ? '' : ` · ${gpos >= 0 ? `${gpos + 1}/${siblings.length}` : '—'}`}
          </button>
          <button disabled={gpos < 0 || gpos >= siblings.length - 1} onClick={() => go(siblings[gpos + 1]!)}>
            next in group ▶
          </button>
        </span>
        <span class="muted" style={{ fontSize: '12px' }}>
          j / k: next / previous sample
        </span>
      </div>
      {summary.error ? (
        <ErrorNote error={summary.error}>
          <br />
          The step's dump could not be read, so its other samples and this sample's figures from the dump are missing; what the run's other files hold is shown.
        </ErrorNote>
      ) : null}
      {lane && (
        <section class="panel" style={{ marginTop: '10px' }}>
          <header>
            <h3>Lifecycle</h3>
            <span class="muted lifecycle-legend" style={{ fontSize: '12px' }} data-testid="lifecycle-legend">
              <i class="swatch" style={{ background: LIFECYCLE_COLORS.queue }} /> queued <i class="swatch" style={{ background: LIFECYCLE_COLORS.generating }} /> generating (turn ·
              weight version) <i class="swatch" style={{ background: LIFECYCLE_COLORS.tool_wait }} /> tool wait ·{' '}
              <a href={href('/timeline', lifecycleWindow(lane))} data-testid="lifecycle-timeline-link">
                see it on Compute Utilization
              </a>
            </span>
          </header>
          <LifecycleStrip lane={lane} />
        </section>
      )}
      <nav class="tabs" aria-label="sample tabs">
        <a href={tabHref('conversation')} class={tab === 'conversation' ? 'active' : ''}>
          Conversation
        </a>
        <a href={tabHref('tokens')} class={tab === 'tokens' ? 'active' : ''}>
          Tokens
        </a>
      </nav>
      {tab === 'conversation' ? (
        conv.error ? (
          <ErrorNote error={conv.error} />
        ) : conv.loading || (!exists && summary.loading) || (!conv.data && conv.data !== null) ? (
          <Loading what="conversation" />
        ) : conv.data === null ? (
          <Empty>
            No conversation recorded for this sample: the step's trajectory sidecar has no entry for it{evaluation ? ' (eval steps usually record none)' : ''}.{' '}
            <a href={tabHref('tokens')}>Read its tokens instead</a>.
          </Empty>
        ) : (
          <Conversation messages={conv.data.messages} find={p.get('find') ?? ''} />
        )
      ) : (
        <TokensPanel id={id} idx={idx} evaluation={evaluation} params={p} onAnswered={() => setTokensAnsweredFor(step)} />
      )}
    </div>
  );
}

/**
 * Why the sample got its advantage: its group's reward mean and std (n samples) beside its advantage (`adv_mean`,
 * and `normalized_reward` when it differs), so `reward 0, group mean 0.25, std 0.463 → advantage −0.540` reads.
 */
function Advantage({ row, reward, group }: { row: Row; reward: number | null; group: Row | undefined }) {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const adv = num(row.adv_mean);
  const norm = num(row.normalized_reward);
  const advantage = adv ?? norm;
  const n = num(group?.n);
  const mean = num(group?.reward_mean);
  const std = num(group?.reward_std);
  const grouped = n !== null && n >= 2 && mean !== null;
  if (advantage === null && !grouped) return null;
  // what GRPO's normalisation gives, for the title: (reward − mean) / std
  const grpo = grouped && reward !== null && std !== null && std > 0 ? (reward - mean!) / std : null;
  const title = [
    advantage !== null && (adv !== null ? `adv_mean ${fmtNum(adv)}: the mean of the sample's per-token advantages` : `normalized_reward ${fmtNum(norm)}`),
    adv !== null && norm !== null && `normalized_reward ${fmtNum(norm)}: its reward normalised within its group`,
    grpo !== null && `(reward ${fmtNum(reward)} − group mean ${fmtNum(mean)}) ÷ group std ${fmtNum(std)} = ${fmtNum(grpo)}`,
  ]
    .filter(Boolean)
    .join('\n');
  return (
    <>
      {grouped && (
        <span class="chip" data-testid="group-rewards" title={`the rewards of group ${row.group_index}'s ${n} samples: mean and sample std (ddof 1)`}>
          group mean {fmtNum(mean)} · std {std === null ? '—' : fmtNum(std)} · n {n}
        </span>
      )}
      {advantage !== null && (
        <span class="chip" data-testid="advantage" title={title}>
          {adv !== null && norm !== null && Math.abs(adv - norm) > 1e-6
            ? // the group's normalisation gives normalized_reward; the tokens' advantages average to another value
              `→ normalized reward ${fmtNum(norm)} · advantage (token mean) ${fmtNum(adv)}`
            : `→ advantage ${fmtNum(advantage)}`}
        </span>
      )}
    </>
  );
}
