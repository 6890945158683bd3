// Conversation: role-tagged turns, collapsible thinking, structured tool calls and results, long texts folded.
import { createContext } from 'preact';
import { useContext, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { markPainted } from '../../paintMarks.ts';
import type { Message, ToolCall } from '../../../src/wire/index.ts';
import { type Finder, foundRanges, holds, mostSpecific, parseFind } from './findTerms.ts';

const FOLD_CHARS = 1600;
const FOLD_LINES = 36;

/** The most specific term of what a search opened this conversation at (null for none): the texts holding it open. */
const Find = createContext<Finder | null>(null);
/** The names of the highlights (`::highlight(rlsight-find)` in the style sheet): the most specific term, the others. */
const FIND_HIGHLIGHT = 'rlsight-find';
const FIND_MORE_HIGHLIGHT = 'rlsight-find-more';

/** Splits a raw assistant string into text, <think> and <tool_call> parts (models that inline them). */
export function splitInline(text: string): { kind: 'text' | 'think' | 'tool_call'; body: string }[] {
  const out: { kind: 'text' | 'think' | 'tool_call'; body: string }[] = [];
  const re = /<(think|tool_call)>([\s\S]*?)(?:<\/\1>|$)/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push({ kind: 'text', body: text.slice(last, m.index) });
    out.push({ kind: m[1] as 'think' | 'tool_call', body: m[2]!.trim() });
    last = re.lastIndex;
  }
  if (last < text.length) out.push({ kind: 'text', body: text.slice(last) });
  // Trailing special tokens (<|im_end|> …) are chat-template noise.
  return out.map((p) => (p.kind === 'text' ? { ...p, body: p.body.replace(/(<\|[^|]*\|>\s*)+$/, '') } : p)).filter((p) => p.body.trim() !== '');
}

function asText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((c) => c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string'))
    return content.map((c) => (c as { text: string }).text).join('\n');
  return null;
}

export function prettyJson(v: unknown): string {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}

function Folded({ text, cls = 'msg-text' }: { text: string; cls?: string }) {
  const find = useContext(Find);
  const lines = text.split('\n').length;
  const long = text.length > FOLD_CHARS || lines > FOLD_LINES;
  const head = long ? text.split('\n').slice(0, FOLD_LINES).join('\n').slice(0, FOLD_CHARS) : text;
  // unfolded from the start when the text a search opened it at lies past the fold
  const [open, setOpen] = useState(() => long && holds(find, text) && !holds(find, head));
  if (!long || open)
    return (
      <>
        <pre class={cls}>{text}</pre>
        {long && (
          <button class="fold" onClick={() => setOpen(false)}>
            fold
          </button>
        )}
      </>
    );
  return (
    <>
      <pre class={cls}>{head}…</pre>
      <button class="fold" onClick={() => setOpen(true)}>
        show all ({text.length.toLocaleString()} characters, {lines} lines)
      </button>
    </>
  );
}

function Thinking({ text }: { text: string }) {
  const find = useContext(Find);
  return (
    <details class="thinking" open={text.length < 600 || holds(find, text)}>
      <summary>thinking · {text.length.toLocaleString()} chars</summary>
      <Folded text={text} />
    </details>
  );
}

function ToolCallBlock({ call }: { call: ToolCall | { name?: string; arguments?: unknown } }) {
  const fn = (call as ToolCall).function ?? call;
  return (
    <div class="tool-call">
      <div class="head">
        tool call <code>{fn.name ?? '(unnamed)'}</code>
        {(call as ToolCall).id ? <span class="muted"> · {(call as ToolCall).id}</span> : null}
      </div>
      <Folded text={prettyJson(fn.arguments ?? {})} cls="json" />
    </div>
  );
}

function MessageBody({ m }: { m: Message }) {
  const text = asText(m.content);
  if (m.role === 'tool') {
    return (
      <div class="tool-result">
        <div class="head">
          tool result{m.name ? <code style={{ color: '#fff' }}> {m.name}</code> : null}
          {m.tool_call_id ? <span class="muted"> · {m.tool_call_id}</span> : null}
        </div>
        <Folded text={text !== null ? prettyJson(text) : prettyJson(m.content)} cls="json" />
      </div>
    );
  }
  const parts: preact.ComponentChildren[] = [];
  if (m.reasoning_content) parts.push(<Thinking key="r" text={m.reasoning_content} />);
  if (text !== null) {
    if (m.role === 'assistant' && !m.reasoning_content && !m.tool_calls?.length) {
      splitInline(text).forEach((p, i) => {
        if (p.kind === 'think') parts.push(<Thinking key={`t${i}`} text={p.body} />);
        else if (p.kind === 'tool_call') {
          let call: { name?: string; arguments?: unknown } = { arguments: p.body };
          try {
            call = JSON.parse(p.body);
          } catch {
            /* not JSON: show the raw body */
          }
          parts.push(<ToolCallBlock key={`c${i}`} call={call} />);
        } else parts.push(<Folded key={`x${i}`} text={p.body} />);
      });
    } else if (text.trim()) parts.push(<Folded key="x" text={text} />);
  } else if (m.content != null) parts.push(<Folded key="j" text={prettyJson(m.content)} cls="json" />);
  for (const [i, c] of (m.tool_calls ?? []).entries()) parts.push(<ToolCallBlock key={`tc${i}`} call={c} />);
  if (!parts.length) parts.push(<span key="e" class="muted">(empty)</span>);
  return <>{parts}</>;
}

function CopyButton({ text }: { text: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      class="icon"
      title="copy this message's text"
      onClick={(e) => {
        e.preventDefault();
        void navigator.clipboard?.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1200);
        });
      }}
    >
      {done ? 'copied' : 'copy'}
    </button>
  );
}

/**
 * Every stretch `finder` highlights in the text under `root` (within one text node each), in text order: those
 * of its most specific term found anywhere (`best`), and the others.
 */
function occurrences(root: HTMLElement, finder: Finder): { best: Range[]; more: Range[] } {
  const found: { range: Range; rank: number }[] = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    // a message's summary line (role, size, copy) is not its text
    if (node.parentElement?.closest('summary')) continue;
    for (const [a, b, rank] of foundRanges(finder, node.nodeValue ?? '')) {
      const r = document.createRange();
      r.setStart(node, a);
      r.setEnd(node, b);
      found.push({ range: r, rank });
    }
  }
  const best = Math.min(...found.map((f) => f.rank));
  return { best: found.filter((f) => f.rank === best).map((f) => f.range), more: found.filter((f) => f.rank !== best).map((f) => f.range) };
}

/**
 * The recorded conversation; `find` (what a search matched: its query) is highlighted wherever it occurs, the
 * messages and thinking that hold it opened, and the first occurrence of its most specific term (the query's
 * words in sequence, else its longest phrase or word) scrolled into view.
 */
export function Conversation({ messages, find = '' }: { messages: Message[]; find?: string }) {
  useEffect(() => markPainted('sample'), []);
  const root = useRef<HTMLDivElement>(null);
  const finder = useMemo(() => parseFind(find), [find]);
  // every term is highlighted; the messages, thinking and folded texts holding the most specific one are opened
  const opener = useMemo(() => mostSpecific(finder, messages.map((m) => JSON.stringify(m)).join('\n')), [finder, messages]);
  useEffect(() => {
    const el = root.current;
    if (!el || !finder) return;
    const { best, more } = occurrences(el, finder);
    el.dataset.found = String(best.length + more.length);
    const registry = (globalThis as { CSS?: { highlights?: Map<string, unknown> } }).CSS?.highlights;
    const Highlight = (globalThis as { Highlight?: new (...ranges: Range[]) => unknown }).Highlight;
    // the most specific term stands out; the query's other words (often short, common ones) are marked lighter
    if (registry && Highlight && best.length) registry.set(FIND_HIGHLIGHT, new Highlight(...best));
    if (registry && Highlight && more.length) registry.set(FIND_MORE_HIGHLIGHT, new Highlight(...more));
    best[0]?.startContainer.parentElement?.scrollIntoView({ block: 'center' });
    return () => {
      registry?.delete(FIND_HIGHLIGHT);
      registry?.delete(FIND_MORE_HIGHLIGHT);
      delete el.dataset.found;
    };
  }, [messages, finder]);
  return (
    <Find.Provider value={opener}>
      <div class="conversation" data-testid="conversation" ref={root}>
        {messages.map((m, i) => {
          const text = asText(m.content) ?? '';
          return (
            <details class="msg" key={i} open={m.role !== 'system' || holds(opener, JSON.stringify(m))}>
              <summary>
                <span class={`role role-${m.role}`}>{m.role}</span>
                {m.name && <span class="muted">· {m.name}</span>}
                {m.tool_calls?.length ? <span class="chip">{m.tool_calls.length} tool call{m.tool_calls.length > 1 ? 's' : ''}</span> : null}
                {m.reasoning_content ? <span class="chip">thinking</span> : null}
                <span class="muted" style={{ marginLeft: 'auto' }}>
                  #{i} · {text.length.toLocaleString()} chars
                </span>
                <CopyButton text={text || prettyJson(m.content)} />
              </summary>
              <div class="msg-body">
                <MessageBody m={m} />
              </div>
            </details>
          );
        })}
      </div>
    </Find.Provider>
  );
}
