// Agentic math conversations: a question, thinking, python tool calls and a boxed answer,
// rendered with a Qwen-style chat template into the segments the token dump is made of.
import type { SeededRandom } from './random.ts';

export interface ToolCall {
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  name?: string;
}

/** A rendered stretch of the token sequence: the prompt, text the model generated, or text a tool returned. */
export interface Segment {
  kind: 'prompt' | 'model' | 'tool';
  /** 1-based generation turn for model text; the turn whose call a tool answered for tool text. */
  turn: number;
  text: string;
}

export interface Problem {
  family: string;
  question: string;
  answer: number;
}

export interface Conversation {
  problem: Problem;
  prompt: ChatMessage[];
  messages: ChatMessage[];
  segments: Segment[];
  /** The number the model finally boxed, or null when it never answered. */
  finalAnswer: number | null;
  toolCalls: number;
}

export const SYSTEM_PROMPT =
  'You are a careful math assistant. Think step by step. You can run Python with the python tool; put the final answer in \\boxed{}.';

const NAMES = ['Maya', 'Liam', 'Ava', 'Noah', 'Zoe', 'Omar', 'Iris', 'Theo', 'Nina', 'Ravi', 'Lena', 'Hugo'];
const ITEMS = ['boxes', 'crates', 'parcels', 'books', 'bottles', 'tickets', 'chairs', 'lamps'];

function choose(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return Math.round(r);
}

/** A fresh word problem; `difficulty` in [0, 1] scales the numbers. */
export function makeProblem(rng: SeededRandom, difficulty: number): Problem {
  const scale = 1 + Math.floor(difficulty * 9);
  const family = rng.pick(['travel', 'warehouse', 'multiples', 'committee', 'savings']);
  switch (family) {
    case 'travel': {
      const speed = rng.int(3, 12) * 5 * scale;
      const hours = rng.int(2, 6);
      const later = rng.int(3, 11);
      return {
        family,
        question: `A train travels ${speed * hours} km in ${hours} hours at a constant speed. How many kilometers does it travel in ${later} hours?`,
        answer: speed * later,
      };
    }
    case 'warehouse': {
      const name = rng.pick(NAMES);
      const item = rng.pick(ITEMS);
      const start = rng.int(20, 90) * scale;
      const out = rng.int(3, 15) * scale;
      const inn = rng.int(2, 12) * scale;
      const days = rng.int(3, 14);
      return {
        family,
        question: `${name} runs a warehouse that holds ${start} ${item}. Each day it ships ${out} ${item} and receives ${inn} new ones. How many ${item} are in the warehouse after ${days} days?`,
        answer: start + (inn - out) * days,
      };
    }
    case 'multiples': {
      const a = rng.int(3, 9);
      const b = rng.int(5, 40) * 10 * scale;
      let sum = 0;
      for (let x = a; x < b; x += a) sum += x;
      return { family, question: `What is the sum of all positive multiples of ${a} that are less than ${b}?`, answer: sum };
    }
    case 'committee': {
      const n = rng.int(6, 12 + scale);
      const k = rng.int(2, Math.min(5, n - 2));
      return {
        family,
        question: `A club has ${n} members. In how many ways can it choose a committee of ${k} members, if the order does not matter?`,
        answer: choose(n, k),
      };
    }
    default: {
      const name = rng.pick(NAMES);
      const weekly = rng.int(4, 30) * scale;
      const weeks = rng.int(5, 26);
      const spent = rng.int(1, 9) * scale * 3;
      return {
        family,
        question: `${name} saves ${weekly} dollars every week for ${weeks} weeks and then spends ${spent} dollars on a gift. How many dollars does ${name} have left?`,
        answer: weekly * weeks - spent,
      };
    }
  }
}

function pythonFor(problem: Problem, buggy: boolean): { code: string; result: number } {
  const nums = (problem.question.match(/\d+/g) ?? []).map(Number);
  switch (problem.family) {
    case 'travel': {
      const [dist, hours, later] = nums;
      return { code: `speed = ${dist} / ${hours}\nprint(speed * ${buggy ? later - 1 : later})`, result: buggy ? (dist / hours) * (later - 1) : (dist / hours) * later };
    }
    case 'warehouse': {
      const [start, out, inn, days] = nums;
      return {
        code: `stock = ${start}\nfor day in range(${buggy ? days - 1 : days}):\n    stock += ${inn} - ${out}\nprint(stock)`,
        result: start + (inn - out) * (buggy ? days - 1 : days),
      };
    }
    case 'multiples': {
      const [a, b] = nums;
      let sum = 0;
      for (let x = a; x <= (buggy ? b : b - 1); x += a) sum += x;
      return { code: `print(sum(range(${a}, ${buggy ? b + 1 : b}, ${a})))`, result: sum };
    }
    case 'committee': {
      const [n, k] = nums;
      return { code: `from math import comb\nprint(comb(${n}, ${buggy ? k + 1 : k}))`, result: choose(n, buggy ? k + 1 : k) };
    }
    default: {
      const [weekly, weeks, spent] = nums;
      return { code: `total = ${weekly} * ${weeks}\nprint(total - ${spent})`, result: buggy ? weekly * weeks + spent : weekly * weeks - spent };
    }
  }
}

const OPENERS = [
  'Let me read the problem carefully.',
  'Okay, so the question asks for a single number.',
  'First I should figure out what quantity is being asked for.',
  'Let me set up the calculation before doing any arithmetic.',
];
const PLANS = [
  'The safest way is to compute it with a short Python snippet instead of by hand.',
  'I will write the formula down and let Python do the arithmetic.',
  'This is easy to get wrong mentally, so I will check it with code.',
  'A loop in Python will make the counting explicit.',
];
const CHECKS = [
  'The tool returned {r}. Does that make sense?',
  'So the result is {r}. Let me sanity check the order of magnitude.',
  'Python says {r}. That looks reasonable for these numbers.',
];
const DOUBTS = [
  'Wait, maybe I misread the question. Let me go over it again.',
  'Hmm, I am not completely sure about the boundary case here.',
  'Actually, let me reconsider whether the last step counts or not.',
  'Let me double check the units before answering.',
];
const CONFIRMS = [
  'The numbers are consistent, so I am confident in the answer.',
  'Both ways of looking at it agree.',
  'Good, the check matches the first computation.',
];

function fill(template: string, r: number): string {
  return template.replace('{r}', formatNumber(r));
}

function formatNumber(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2);
}

export interface ConversationPlan {
  /** Probability that the model ends with the right answer. */
  pCorrect: number;
  /** Makes the model loop in its thinking until it runs out of tokens. */
  rambling: boolean;
  /** Number of python calls before answering (0 answers directly). */
  toolCalls: number;
}

function thinking(rng: SeededRandom, parts: string[], extraDoubts: number): string {
  const out = [...parts];
  for (let i = 0; i < extraDoubts; i++) out.push(rng.pick(DOUBTS), rng.pick(PLANS));
  return out.join(' ');
}

/** Renders one model turn the way Qwen-style templates put it in the token stream. */
function renderAssistant(m: ChatMessage): string {
  let s = `<think>\n${m.reasoning_content ?? ''}\n</think>\n\n${m.content}`;
  for (const call of m.tool_calls ?? []) {
    s += `<tool_call>\n{"name": "${call.function.name}", "arguments": ${call.function.arguments}}\n</tool_call>`;
  }
  return s + '<|im_end|>';
}

export function renderPrompt(prompt: ChatMessage[]): string {
  return prompt.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
}

/** The text a tool result adds between two model turns (never trained on). */
function renderToolTurn(result: string): string {
  return `\n<|im_start|>user\n<tool_response>\n${result}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`;
}

export function makeConversation(rng: SeededRandom, problem: Problem, plan: ConversationPlan): Conversation {
  const prompt: ChatMessage[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: problem.question },
  ];
  const messages: ChatMessage[] = [...prompt];
  const segments: Segment[] = [{ kind: 'prompt', turn: 0, text: renderPrompt(prompt) }];
  const correct = rng.chance(plan.pCorrect);
  let turn = 0;
  let lastResult = problem.answer;
  for (let call = 0; call < plan.toolCalls; call++) {
    turn++;
    // A wrong run computes with a bug on its last call and trusts the result.
    const buggy = !correct && call === plan.toolCalls - 1;
    const { code, result } = pythonFor(problem, buggy);
    lastResult = result;
    const reasoning =
      call === 0
        ? thinking(rng, [rng.pick(OPENERS), rng.pick(PLANS)], rng.int(0, 2))
        : thinking(rng, [rng.pick(DOUBTS), 'Let me run it once more to be sure.'], rng.int(0, 1));
    const assistant: ChatMessage = {
      role: 'assistant',
      content: call === 0 ? 'I will compute this with Python.' : 'Let me verify that result.',
      reasoning_content: reasoning,
      tool_calls: [{ function: { name: 'python', arguments: JSON.stringify({ code }) } }],
    };
    messages.push(assistant);
    segments.push({ kind: 'model', turn, text: renderAssistant(assistant) });
    const output = formatNumber(result);
    messages.push({ role: 'tool', name: 'python', content: output });
    segments.push({ kind: 'tool', turn, text: renderToolTurn(output) });
  }
  turn++;
  let finalAnswer: number | null;
  let reasoning: string;
  if (plan.rambling) {
    // The model never commits: the run is cut at the response-length cap.
    const loops: string[] = [];
    for (let i = 0; i < 400; i++) loops.push(rng.pick(DOUBTS), fill(rng.pick(CHECKS), lastResult + i));
    reasoning = loops.join(' ');
    finalAnswer = null;
  } else {
    finalAnswer = plan.toolCalls > 0 ? lastResult : correct ? problem.answer : problem.answer + rng.pick([-2, -1, 1, 3, 10]);
    reasoning =
      plan.toolCalls > 0
        ? `${fill(rng.pick(CHECKS), lastResult)} ${rng.pick(CONFIRMS)}`
        : `${rng.pick(OPENERS)} I can do this one in my head. ${rng.pick(CONFIRMS)}`;
  }
  const final: ChatMessage = {
    role: 'assistant',
    content: finalAnswer === null ? '' : `The answer is \\boxed{${formatNumber(finalAnswer)}}.`,
    reasoning_content: reasoning,
  };
  messages.push(final);
  segments.push({ kind: 'model', turn, text: renderAssistant(final) });
  return { problem, prompt, messages, segments, finalAnswer, toolCalls: plan.toolCalls };
}
