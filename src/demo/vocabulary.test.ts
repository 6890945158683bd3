import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Tokenizer } from '@huggingface/tokenizers';
import { makeConversation, makeProblem } from './conversations.ts';
import { SeededRandom } from './random.ts';
import { demoTokenizer } from './vocabulary.ts';

describe('demo tokenizer', () => {
  const tok = demoTokenizer();
  const lib = new Tokenizer(tok.tokenizerJson(), tok.tokenizerConfig());

  it('encodes as the Hugging Face reader does, and decodes back to the text', () => {
    const rng = new SeededRandom(99);
    for (let i = 0; i < 30; i++) {
      const conv = makeConversation(rng, makeProblem(rng, rng.next()), { pCorrect: 0.5, rambling: i % 7 === 0, toolCalls: i % 4 });
      const text = conv.segments.map((s) => s.text).join('');
      const ids = tok.encode(text);
      assert.deepEqual(lib.encode(text, { add_special_tokens: false }).ids, ids);
      assert.equal(lib.decode(ids, { skip_special_tokens: false }), text);
      assert.equal(tok.decode(ids), text);
    }
  });

  it('keeps chat markup as single tokens and unseen text as bytes', () => {
    assert.deepEqual(tok.encode('<|im_start|>assistant\n<think>'), [tok.idOf('<|im_start|>'), ...tok.encode('assistant\n'), tok.idOf('<think>')]);
    const odd = 'Zebra quokka ünïcode 🚀';
    assert.equal(lib.decode(tok.encode(odd)), odd);
    assert.throws(() => tok.idOf('<nope>'), /not in the demo vocabulary/);
  });
});
