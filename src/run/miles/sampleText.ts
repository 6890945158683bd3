// The searchable text of a rollout dump's samples (`Sample.to_dict()`: prompt, response, label, metadata,
// session and trace identifiers), as plain strings. Shared by every format that dumps samples this way.
import { completedListItems, type PendingPickle } from '../../formats/torch/unpickle.ts';
import { PyEnum, PyObject, Tensor, type PyValue } from '../../formats/torch/value.ts';
import { DumpInconsistent } from '../errors.ts';
import { asInt, asNumber, enumText, field, isDict, isList } from './pyFields.ts';

/** The searchable text of one sample: named text fields (`prompt`, `response`, `label`, `conversation`, `metadata`) and its ids. */
export interface SampleTextRecord {
  sampleIndex: number;
  groupIndex: number | null;
  status: string;
  reward: number | null;
  fields: Record<string, string>;
  /** Identifiers recorded with the sample: request ids, trace ids, session ids. */
  ids: string[];
}


/** A chat message list as `role: content` lines; a string as itself. */
export function chatText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) return '';
  const lines: string[] = [];
  for (const m of v) {
    if (!isDict(m)) {
      if (typeof m === 'string') lines.push(m);
      continue;
    }
    const role = field(m, 'role');
    const parts = [field(m, 'reasoning_content'), field(m, 'content')].filter((x): x is string => typeof x === 'string' && x !== '');
    const calls = field(m, 'tool_calls');
    if (isList(calls)) for (const c of calls) parts.push(plainText(c));
    lines.push(`${typeof role === 'string' ? role : 'message'}: ${parts.join('\n')}`);
  }
  return lines.join('\n');
}

/** Scalars and nested containers flattened to `key: value` text (tensors and bytes left out). */
function plainText(v: unknown, depth = 0): string {
  if (v === null || v === undefined || depth > 6) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof PyEnum) return String(v.value);
  if (v instanceof Tensor || v instanceof PyObject || ArrayBuffer.isView(v)) return '';
  if (Array.isArray(v)) return v.map((x) => plainText(x, depth + 1)).filter(Boolean).join(' ');
  if (v instanceof Map) return [...v.entries()].map(([k, x]) => `${String(k)}: ${plainText(x, depth + 1)}`).join('\n');
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}: ${plainText(x, depth + 1)}`).join('\n');
  return '';
}

const ID_KEY = /(^|_)(id|rid|request_id|trace_id|session_id|span_id)$/;

/** Every string (or integer) found under an id-like key, at any depth (trace events carry `sglang_request_id` in attrs). */
function collectIds(v: unknown, out: Set<string>, depth = 0): void {
  if (depth > 8 || v === null || typeof v !== 'object' || v instanceof Tensor || ArrayBuffer.isView(v)) return;
  const entries: [string, unknown][] =
    v instanceof Map ? [...v.entries()].map(([k, x]) => [String(k), x]) : Array.isArray(v) ? v.map((x) => ['', x]) : Object.entries(v);
  for (const [k, x] of entries) {
    if (k !== '' && ID_KEY.test(k) && k !== 'span_id' && k !== 'parent_span_id') {
      if (typeof x === 'string' && x !== '') out.add(x);
      else if (typeof x === 'number' && Number.isInteger(x) && k !== 'sample_id' && k !== 'group_id') out.add(String(x));
    } else collectIds(x, out, depth + 1);
  }
}

/** The samples list of a decoded rollout dump; `file` names it in errors. */
export function dumpSamples(value: PyValue, file: string): PyValue[] {
  const samples = field(value, 'samples');
  if (!isList(samples)) throw new DumpInconsistent(file, "'samples' is not a list");
  return samples;
}

/**
 * The samples of a dump still being decoded that are complete so far: the head of the `samples` list of its
 * top dict (or of a bare list). Empty when the pickle is not laid out as torch.save writes such a dict.
 */
export function pendingSamples(p: PendingPickle): PyValue[] {
  const { stack, marks } = p;
  if (stack.length === 0) return [];
  if (Array.isArray(stack[0])) return completedListItems(p, 0);
  if (marks.length === 0) {
    // Nothing open: the top value is complete (only STOP is left).
    const samples = field(stack[0], 'samples');
    return isList(samples) ? samples : [];
  }
  if (marks[0] !== 1 || typeof stack[0] !== 'object' || stack[0] === null) return [];
  // The top dict's SETITEMS frame: key, value, key, value, ...
  const frameEnd = marks.length > 1 ? marks[1] : stack.length;
  for (let i = 1; i + 1 < frameEnd; i += 2) {
    if (stack[i] === 'samples' && Array.isArray(stack[i + 1])) return completedListItems(p, i + 1);
  }
  return [];
}

/** The text of the sample at `position` of a dump's list, or null when it has no index; `file` names it in errors. */
export function dumpSampleText(d: PyValue, position: number, file: string): SampleTextRecord | null {
  if (!isDict(d)) throw new DumpInconsistent(file, `sample at position ${position} is not a dict`);
  const index = asInt(field(d, 'index'));
  if (index === null) return null;
  const fields: Record<string, string> = {};
  const prompt = chatText(field(d, 'prompt'));
  if (prompt) fields.prompt = prompt;
  const response = field(d, 'response');
  if (typeof response === 'string' && response) fields.response = response;
  const label = plainText(field(d, 'label'));
  if (label) fields.label = label;
  const metadata = plainText(field(d, 'metadata'));
  if (metadata) fields.metadata = metadata;
  const ids = new Set<string>();
  const session = field(d, 'session_id');
  if (typeof session === 'string' && session) ids.add(session);
  collectIds(field(d, 'metadata'), ids);
  collectIds(field(d, 'trace'), ids);
  const reward = field(d, 'reward');
  return {
    sampleIndex: index,
    groupIndex: asInt(field(d, 'group_index')),
    status: enumText(field(d, 'status')) ?? 'pending',
    reward: typeof reward === 'number' || typeof reward === 'boolean' || typeof reward === 'bigint' ? asNumber(reward) : null,
    fields,
    ids: [...ids],
  };
}
