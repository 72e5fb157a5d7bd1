// Unit tests of the Score page's input-side arithmetic and parsing, with hand-checked cases:
// what an option order costs (src/lib/cost.ts: the default order, the multiple of one order, the
// time estimate) and texts from any CSV (src/lib/texts.ts: the `text` column, or a table for a
// person to choose from). e2e.mjs runs them (as its test "lib: …"), so `npm test` does; esbuild
// (vite's) compiles the TypeScript.
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

export async function scoreInputUnits() {
  const cost = await load('cost');
  // The example rubric: topic (4 answers), refund requested (yes / no: 2), urgency (4 levels).
  const example = [4, 2, 4];
  // Prompts per text: one order reads each question once (3); every rotation reads each question
  // once per option (4 + 2 + 4 = 10); every order reads 4! + 2! + 4! = 24 + 2 + 24 = 50.
  assert.equal(cost.promptsPerText('none', example), 3);
  assert.equal(cost.promptsPerText('cyclic', example), 10);
  assert.equal(cost.promptsPerText('calibrate', example), 10);
  assert.equal(cost.promptsPerText('permutation', example), 50);
  // PriDe: one order, plus the 5 % sample in every rotation: 3 + 0.05 × (3 + 1 + 3) = 3.35.
  assert.ok(Math.abs(cost.promptsPerText('pride', example) - 3.35) < 1e-12);
  // As a multiple of one order: 10 / 3 = 3.33…, shown to a tenth.
  assert.equal(cost.times(cost.timesOneOrder('cyclic', example)), '3.3×');
  assert.equal(cost.times(cost.timesOneOrder('cyclic', [3, 3])), '3×');
  assert.equal(cost.times(cost.timesOneOrder('permutation', example)), '17×'); // 50 / 3 = 16.7, whole from 10 up
  assert.equal(cost.times(cost.timesOneOrder('none', example)), '1×');
  assert.equal(cost.optionsWords(example), '2 to 4 options');
  assert.equal(cost.optionsWords([3, 3]), '3 options');
  // 3 texts × 10 prompts × 0.6 s = 18 s, "about 20 s" (to 5 s from 10 s up).
  assert.ok(Math.abs(cost.estimateSeconds('cyclic', example, 3, 0.6) - 18) < 1e-9);
  assert.equal(cost.aboutTime(18), 'about 20 s');
  assert.equal(cost.aboutTime(7.4), 'about 7 s');
  assert.equal(cost.aboutTime(0.4), 'under a second');
  assert.equal(cost.aboutTime(240), 'about 4 min');
  assert.equal(cost.aboutTime(5400), 'about 1.5 h');
  // The default order: every rotation with nothing measured, or while these texts fit the 60 s
  // budget: 6 texts × 10 prompts × 1 s = 60 s fits; 7 texts (70 s) do not, so one order.
  assert.equal(cost.ROTATION_BUDGET_SECONDS, 60);
  assert.equal(cost.defaultOrder(example, 200, null), 'cyclic');
  assert.equal(cost.defaultOrder(example, 6, 1), 'cyclic');
  assert.equal(cost.defaultOrder(example, 7, 1), 'none');
  assert.equal(cost.defaultOrder([], 7, 1), 'cyclic', 'no rubric yet: the recommended order');

  const texts = await load('texts');
  // A `text` column (any case), ids carried; `state` as the CLI takes it.
  assert.deepEqual(texts.readTextFile('a.csv', 'ID,Text\n1,hello\n2,"a, b"\n'), { texts: [{ id: '1', text: 'hello' }, { id: '2', text: 'a, b' }] });
  assert.deepEqual(texts.readTextFile('a.csv', 'state\nhi\n'), { texts: [{ text: 'hi' }] });
  // One column without a header named text: every line a text (as before).
  assert.deepEqual(texts.readTextFile('a.csv', 'first\nsecond\n'), { texts: [{ text: 'first' }, { text: 'second' }] });
  // Any other CSV: its table, for a person to choose the column.
  const picked = texts.readTextFile('tickets.csv', 'message,ticket_id\n"Charged twice, refund please",T-1\nApp crashes,T-2\n');
  assert.deepEqual(picked, { table: { header: ['message', 'ticket_id'], rows: [['Charged twice, refund please', 'T-1'], ['App crashes', 'T-2']] } });
  assert.deepEqual(texts.textsFromTable(picked.table, 0, 1, 'tickets.csv'), [
    { id: 'T-1', text: 'Charged twice, refund please' },
    { id: 'T-2', text: 'App crashes' },
  ]);
  assert.deepEqual(texts.textsFromTable(picked.table, 0, null, 'tickets.csv'), [{ text: 'Charged twice, refund please' }, { text: 'App crashes' }]);
  // An empty cell in the chosen column is refused by its line (the header is line 1).
  assert.throws(() => texts.textsFromTable({ header: ['a', 'b'], rows: [['x', '1'], ['', '2']] }, 0, null, 'f.csv'), /^Error: f\.csv, line 3: the “a” column is empty there/);
  assert.throws(() => texts.readTextFile('f.csv', 'a,b\n'), /has a header line but no texts/);
  // JSON Lines: strings, or objects with `text` (or `state`) and an id.
  assert.deepEqual(texts.readTextFile('t.jsonl', '"one"\n\n{"text": "two", "id": 7}\n{"state": "three"}\n'), {
    texts: [{ text: 'one' }, { text: 'two', id: '7' }, { text: 'three' }],
  });
  assert.throws(() => texts.readTextFile('t.jsonl', '{"text": "ok"}\n{"body": "no"}\n'), /t\.jsonl, line 2: no text on this line/);
}
