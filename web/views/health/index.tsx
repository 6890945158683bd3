// Health board: one row per train step, one column per failure signal, each cell coloured by its threshold and
// linking to the view with the evidence. The server computes every value; this view only lays them out.
import { getJson } from '../../api.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { liveTick } from '../../live.ts';
import { useStore } from '../../store.ts';
import type { HealthAnswer, HealthCell, Meta, SignalSpec } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { href } from '../../route.ts';
import { evidenceHref } from './evidence.ts';

function cellText(c: HealthCell): string {
  if (c.value === null) return '–';
  const v = c.value;
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 10 ? v.toFixed(1) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3);
}

function signalTitle(s: SignalSpec): string {
  return `${s.doc}\nwarn above ${s.warn}, fires above ${s.fire}`;
}

export function HealthView({ meta }: { meta: Meta }) {
  const tick = useStore(liveTick);
  const board = useApi('health', (signal) => getJson<HealthAnswer>('rlsight/health', {}, signal), tick);
  if (board.error) return <ErrorNote error={board.error} />;
  if (!board.data) return <Loading what="health board" />;
  const { signals, rows, fired, warnings } = board.data;
  if (rows.length === 0)
    return <Empty>No train steps in this run yet{meta.mode === 'follow' ? ' — rows appear as the job writes its dumps.' : '.'}</Empty>;
  return (
    <section class="health">
      <h2 class="view-title">
        Health — {rows.length} steps, {fired.length === 0 ? 'no signal fired' : `${fired.length} signal${fired.length === 1 ? '' : 's'} fired`}
      </h2>
      {warnings.length > 0 && (
        <p class="health-warnings" role="status">
          {warnings.join(' · ')}
        </p>
      )}
      <div class="health-scroll">
        <table class="health-board">
          <thead>
            <tr>
              <th scope="col">step</th>
              {signals.map((s) => (
                <th scope="col" title={signalTitle(s)} data-signal={s.id}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr class={r.damaged ? 'damaged' : undefined} data-damaged={r.damaged}>
                <th scope="row" title={r.damaged ? `damaged: ${r.damaged}` : undefined}>
                  <a href={href(`/rollout/${r.step}`)}>{r.step}</a>
                  {r.damaged && <span class="health-damaged"> damaged</span>}
                </th>
                {signals.map((s) => {
                  const c = r.cells[s.id];
                  const text = cellText(c);
                  return (
                    <td class={`hc ${c.level}`} data-signal={s.id} title={`${s.label}: ${c.detail}`}>
                      {c.evidence ? <a href={evidenceHref(c.evidence)}>{text}</a> : text}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="health-legend">
        <span class="hc ok">ok</span> <span class="hc warn">warn</span> <span class="hc fire">fired</span> <span class="hc none">no data</span> — hover a
        column for its threshold, a cell for what was measured; click a cell for the evidence. Thresholds: <code>--health-config FILE</code>.
      </p>
    </section>
  );
}
