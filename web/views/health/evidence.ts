// Where a health cell's evidence is shown, as an app link.
import { href } from '../../route.ts';
import type { Evidence } from '../../../src/wire/index.ts';

export function evidenceHref(e: Evidence): string {
  switch (e.view) {
    case 'rollout':
      return href(`/rollout/${e.step}`, { tab: e.tab, sort: e.sort, desc: e.sort ? true : undefined });
    case 'sample':
      return href(`/rollout/${e.step}/sample/${e.sample_index}`, { tab: 'tokens', color: e.color });
    case 'metrics':
      return href('/', { q: e.keys.join(' ') });
    case 'timeline':
      return href('/timeline', { t0: +e.t0.toFixed(3), t1: +e.t1.toFixed(3), lanes: e.lanes });
  }
}
