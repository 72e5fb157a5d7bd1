// Unit tests of the UI's pure functions that decide words and levels (src/lib/verdict.ts, the
// stopped-run words of src/lib/answers.ts), with hand-checked cases. e2e.mjs runs them (as its
// test "lib: …"), so `npm test` does; esbuild (vite's) compiles the TypeScript.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'lib');

/** The module at src/lib/NAME.ts, compiled and imported. */
async function load(name) {
  const out = await build({ entryPoints: [join(src, `${name}.ts`)], bundle: true, format: 'esm', write: false, platform: 'neutral', logLevel: 'silent' });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
}

export async function libUnits() {
  const { verdict, accuracyLevel, POOR_GAP } = await load('verdict');
  const { ranges, stoppedWords, shareOf } = await load('answers');

  // The Evaluate headline against guessing (src/lib/chance.ts): below it worse; under POOR_GAP
  // (10) points above it barely better; from 10 points on clearly better.
  const { againstGuessing, rightOfTheTime } = await load('chance');
  assert.equal(againstGuessing(0.30, 1 / 3), 'worse'); // 3.3 points below
  assert.equal(againstGuessing(0.40546, 1 / 3), 'barely'); // 7.2 points above (the cyclic fixture)
  assert.equal(againstGuessing(0.4334, 1 / 3), 'clearly'); // 10.0 points above
  assert.equal(againstGuessing(0.55, 0.5), 'barely'); // 5 points above two options' 50 %
  assert.equal(rightOfTheTime(0.40546, 1 / 3), 'Right 41 % of the time (guessing: 33 %)');
  assert.equal(rightOfTheTime(0.995, undefined), 'Right 100 % of the time');

  // Levels: 10 points above guessing is the line between poor and fair; 70 % and 25 points make good.
  assert.equal(POOR_GAP, 10);
  assert.equal(accuracyLevel(0.41, 0.36), 'poor'); // 5 points above
  assert.equal(accuracyLevel(0.3, 0.36), 'poor'); // below guessing
  assert.equal(accuracyLevel(0.47, 0.36), 'fair'); // 11 points above
  assert.equal(accuracyLevel(0.69, 0.25), 'fair'); // under 70 %
  assert.equal(accuracyLevel(0.72, 0.5), 'fair'); // 22 points above
  assert.equal(accuracyLevel(0.81, 0.36), 'good');
  assert.equal(accuracyLevel(0.45, null), 'poor'); // no chance figure: under 50 %
  assert.equal(accuracyLevel(0.75, null), 'good');

  const record = { model: 'SmolLM2 135M', accuracy: 0.4123, chance: 0.3589, eval_set: 'authored144', rows: 144, debias: 'none', created: '2026-12-01T12:10:11Z', file: 'r.json' };
  const poor = verdict({ record, texts: 20, answers: 60, flagged: 6, orderChecked: true });
  assert.equal(poor.level, 'poor');
  assert.equal(poor.headline, 'Barely better than guessing: SmolLM2 135M was right 41 % of the time on the bundled test set (guessing: 36 %).');
  assert.equal(poor.step, 'Treat these answers as a rough first sort; try a larger judge, or review the 5 texts it is least sure of.');
  assert.equal(poor.orderNote, null);
  assert.equal(poor.badgeCells, true, '6 of 60 flagged single some out');

  // Half the answers flagged: the flags are the headline, the cells carry no badge.
  const noisy = verdict({ record: { ...record, accuracy: 0.9 }, texts: 3, answers: 9, flagged: 8, orderChecked: true });
  assert.equal(noisy.level, 'poor');
  assert.match(noisy.headline, /^8 of 9 answers are close calls, changed when the options were reordered, or not given: these answers are not reliable\. SmolLM2 135M was right 90 %/);
  assert.equal(noisy.badgeCells, false);
  assert.equal(verdict({ record, texts: 4, answers: 8, flagged: 3, orderChecked: true }).badgeCells, true, '3 of 8 is under half');

  // Never measured; one order scored.
  const unknown = verdict({ record: null, texts: 3, answers: 9, flagged: 0, orderChecked: false });
  assert.equal(unknown.level, 'unknown');
  assert.equal(unknown.headline, 'No measured accuracy for this model yet: run it on Evaluate to see how often it is right.');
  assert.equal(unknown.step, 'Meanwhile, review the 3 texts it is least sure of.');
  assert.equal(unknown.orderNote, 'Option order not checked: score with every rotation to see which answers hold.');

  const good = verdict({ record: { ...record, accuracy: 0.81, eval_set: 'tickets' }, texts: 10, answers: 10, flagged: 1, orderChecked: true });
  assert.equal(good.level, 'good');
  assert.equal(good.headline, 'Usually right: SmolLM2 135M was right 81 % of the time on the test set “tickets” (guessing: 36 %).');
  assert.equal(good.step, 'Check the 1 flagged answer by hand before relying on it.');
  const fair = verdict({ record: { ...record, accuracy: 0.58 }, texts: 10, answers: 10, flagged: 0, orderChecked: true });
  assert.equal(fair.level, 'fair');
  assert.match(fair.headline, /^Better than guessing, but often wrong: /);

  // Runs of numbers, and which texts a stopped run scored.
  assert.equal(ranges([1, 2, 3, 5, 7, 8]), '1–3, 5, 7–8');
  assert.equal(ranges([4]), '4');
  assert.equal(ranges([]), '');
  assert.equal(stoppedWords([0, 1, 2, 3, 4, 5], 200), 'Stopped after 6 of 200 texts: texts 1–6 are scored; 7–200 were not.');
  assert.equal(stoppedWords([0], 2), 'Stopped after 1 of 2 texts: text 1 is scored; 2 was not.');
  assert.equal(stoppedWords([0, 1, 4], 6), 'Stopped after 3 of 6 texts: texts 1–2, 5 are scored; 3–4, 6 were not.');
  assert.equal(stoppedWords([], 5), 'Stopped after 0 of 5 texts: none is scored.');
  assert.equal(shareOf(5, 8), '63 %'); // 62.5 rounds up
  assert.equal(shareOf(0, 0), '0 %');
}
