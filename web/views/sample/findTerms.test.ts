import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findOfMatch, foundRanges, holds, mostSpecific, parseFind } from './findTerms.ts';

const texts = (find: string, text: string) => foundRanges(parseFind(find), text).map(([a, b, rank]) => `${text.slice(a, b)}#${rank}`);

test('a query is highlighted as the search matched it: its words in sequence, else each whole word, the last as a prefix', () => {
  const text = 'What is the sum of all positive multiples of 7 that are less than 100? Some offer 70 of them.';
  // the words in sequence are one highlight (the most specific, rank 0); elsewhere each word alone
  assert.deepEqual(texts('multiples of 7', text), ['of#2', 'multiples of 7#0', '7#3', 'of#2']);
  // a word is a whole word ("of" is not in "offer"); the last word, still being typed, is a prefix ("7" in "70")
  assert.ok(!texts('multiples of 7', text).some((t) => t.startsWith('off')));
  // a query ending in a space has no word being typed: "7" is then a whole word only
  assert.deepEqual(texts('of 7 ', 'of 7 and 70'), ['of 7#0']);
  assert.deepEqual(texts('7 of ', '70 of 7'), ['of#1', '7#2']);
});

test('phrases, regular expressions and bare numbers are highlighted as the search reads them', () => {
  assert.deepEqual(texts('"python tool"', 'use the Python tool, not the python toolbox'), ['Python tool#0']);
  assert.deepEqual(texts('/mult\\w+/i', 'Multiples and multiplied'), ['Multiples#0', 'multiplied#0']);
  // a regular expression that matches the empty string highlights only what it matched
  assert.deepEqual(texts('/x*/', 'axxb'), ['xx#0']);
  assert.equal(parseFind('/(unclosed/'), null);
  assert.equal(parseFind('  '), null);
  assert.equal(holds(parseFind('"python tool"'), 'a python tool'), true);
  assert.equal(holds(parseFind('"python tool"'), 'a python toolbox'), false);
});

test('a search result opens its sample with the query, not only its first matched word', () => {
  assert.equal(findOfMatch({ field: 'prompt', match: 'of' }, 'multiples of 7'), 'multiples of 7');
  assert.equal(findOfMatch({ field: 'conversation', match: 'Python tool' }, '"python tool"'), '"python tool"');
  assert.equal(findOfMatch({ field: 'prompt', match: 'Mult' }, '/mult\\w*/i'), '/mult\\w*/i');
  // a bare number no sample has as its index was looked for in the texts as a phrase
  assert.equal(findOfMatch({ field: 'prompt', match: '999999' }, '999999'), '"999999"');
  // a hit on an id or a sample index has nothing to highlight
  assert.equal(findOfMatch({ field: 'id', match: 'req-1' }, 'req-1'), undefined);
  assert.equal(findOfMatch({ field: 'sample_index', match: '3' }, '2:3'), undefined);
});

test('what opens a folded text is the most specific term the conversation holds, not a common word of the query', () => {
  const finder = parseFind('positive multiples of');
  const opener = mostSpecific(finder, 'the sum of all positive multiples of 3');
  assert.equal(holds(opener, 'a long tool result, and the rest of it'), false);
  assert.equal(holds(opener, 'all positive multiples of 3'), true);
  // without the words in sequence anywhere, the longest word opens
  const longest = mostSpecific(finder, 'multiples, of course, and positive ones');
  assert.equal(holds(longest, 'multiples'), true);
  assert.equal(holds(longest, 'positive of'), false);
  assert.equal(mostSpecific(finder, 'nothing here'), null);
});
