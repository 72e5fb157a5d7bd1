// Agreement per question, in words: a run's answers against the right answers (every run with
// gold records it), or one run's answers against another's (a comparison). Raw agreement, Cohen's
// κ (weighted when the options are levels) and Krippendorff's α, each with its 95% interval, and
// the confusion matrix on demand. Every figure is the library's; nothing is computed here.
import type { ComponentChildren } from 'preact';
import { beyondChanceWords, figure } from '../lib/review';
import type { Agreement, CriterionAgreement, RowRecord } from '../types';

/** Who is compared with whom, in words. */
export interface Raters {
  /** "the model", "A" */
  first: string;
  /** "the right answer", "B" */
  second: string;
  /** "The model gives the right answer on" / "A and B give the same answer on" */
  sentence: string;
  /** The confusion matrix's corner: "model said ↓ / right answer →" */
  corner: string;
}

export const AGAINST_GOLD: Raters = {
  first: 'the model',
  second: 'the right answer',
  sentence: 'The model gives the right answer on',
  corner: 'model said ↓ / right answer →',
};

export const BETWEEN_RUNS: Raters = {
  first: 'A',
  second: 'B',
  sentence: 'A and B give the same answer on',
  corner: 'A said ↓ / B said →',
};

function Metric(props: { label: string; value: string; sub: ComponentChildren; help: string; testid: string }) {
  return (
    <div class="metric" title={props.help} data-testid={props.testid}>
      <div class="metric-label">{props.label}</div>
      <div class="metric-value">{props.value}</div>
      <div class="metric-sub">{props.sub}</div>
    </div>
  );
}

/** Agreement, κ and α of one question, each with its 95% interval and in words: the result view's and the review's. */
export function AgreementMetrics(props: { a: Agreement; levels: boolean; rawHelp: string; levelsNote: string; testid: string }) {
  const { a, levels } = props;
  const raw = figure(a.raw, 'share');
  const kappa = figure(a.kappa);
  const alpha = figure(a.alpha);
  return (
    <div class="metrics metrics-3">
      <Metric label="Agreement" value={raw.value} sub={<>95%: {raw.interval}</>} help={props.rawHelp} testid={`${props.testid}-raw`} />
      <Metric
        label={levels ? 'Weighted Cohen’s κ' : 'Cohen’s κ'}
        value={kappa.value}
        sub={
          <>
            {beyondChanceWords(a.kappa.value)} · 95%: {kappa.interval}
          </>
        }
        help={`Agreement beyond chance: 1 is perfect, 0 is what guessing with the same habits would give, below 0 is worse.${levels ? ' Weighted: a level apart counts as a near miss (quadratic weights).' : ''}`}
        testid={`${props.testid}-kappa`}
      />
      <Metric
        label="Krippendorff’s α"
        value={alpha.value}
        sub={
          <>
            {beyondChanceWords(a.alpha.value)} · 95%: {alpha.interval}
          </>
        }
        help={`Another measure of agreement beyond chance, used for labelling studies: 0.8 or more is usually taken as reliable, under 0.67 as too low to rely on.${levels ? props.levelsNote : ''}`}
        testid={`${props.testid}-alpha`}
      />
    </div>
  );
}

/** A question's name: its own, or (row-form sets, whose rows carry no name) the families whose rows offer these options. */
function questionName(c: CriterionAgreement, rows: RowRecord[]): string {
  if (c.criterion) return c.criterion.replace(/_/g, ' ');
  const key = [...c.option_ids].sort().join('\u0000');
  const families = [...new Set(rows.filter((r) => [...r.option_ids].sort().join('\u0000') === key).map((r) => r.family.replace(/_/g, ' ')))];
  return families.length ? families.join(', ') : 'all rows';
}

function Confusion(props: { c: CriterionAgreement; corner: string }) {
  const { c } = props;
  const counts = c.agreement.confusion;
  const max = Math.max(1, ...counts.flat());
  return (
    <div class="scroll-x">
      <table class="confusion" data-testid="agreement-confusion">
        <thead>
          <tr>
            <th class="corner">{props.corner}</th>
            {c.option_ids.map((o) => (
              <th key={o} scope="col">
                {o}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {counts.map((row, g) => (
            <tr key={g}>
              <th scope="row">{c.option_ids[g]}</th>
              {row.map((n, p) => {
                const diag = g === p;
                const s = n / max;
                return (
                  <td
                    key={p}
                    class={`${diag ? 'diag' : ''} ${s > 0.55 ? 'dark' : ''}`}
                    style={{ backgroundColor: n === 0 ? 'transparent' : `rgba(${diag ? '47,111,223' : '224,123,57'},${0.12 + 0.78 * s})` }}
                  >
                    {n === 0 ? '·' : n}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function One(props: { c: CriterionAgreement; rows: RowRecord[]; raters: Raters }) {
  const { c, raters } = props;
  const a = c.agreement;
  const raw = figure(a.raw, 'share');
  const levels = a.scale === 'interval';
  const same = a.raw.value === null ? 0 : Math.round(a.raw.value * a.n);
  const shown = c.disagreements.slice(0, 24);
  return (
    <section class="criterion-summary" data-testid="agreement" data-criterion={c.criterion || c.option_ids.join('|')}>
      <h3 class="sub">
        {questionName(c, props.rows)} <span class="muted small">{c.option_ids.join(' · ')}</span>
      </h3>
      <p class="agreement-words" data-testid="agreement-sentence">
        {a.n === 0 || a.raw.value === null ? (
          'No row has both answers.'
        ) : (
          <>
            <strong>
              {raters.sentence} {same} of {a.n} rows
            </strong>{' '}
            <span class="muted">
              ({raw.value}; 95% interval {raw.interval}
              {a.missing > 0 && `; ${a.missing} row${a.missing === 1 ? '' : 's'} without an answer left out`}).
            </span>
          </>
        )}
      </p>
      <AgreementMetrics
        a={a}
        levels={levels}
        rawHelp={`The share of rows where ${raters.first} and ${raters.second} are the same option, with its 95% interval (groups of rows resampled).`}
        levelsNote=" Levels are treated as numbers."
        testid="agreement"
      />
      {a.n > 0 && (
        <details class="details" data-testid="agreement-details">
          <summary>
            Answer by answer (confusion matrix){c.disagreements.length > 0 && ` · ${c.disagreements.length} row${c.disagreements.length === 1 ? '' : 's'} where they differ`}
          </summary>
          <Confusion c={c} corner={raters.corner} />
          {shown.length > 0 && (
            <p class="small muted" data-testid="agreement-disagreements">
              Where they differ: <span class="mono">{shown.join(', ')}</span>
              {c.disagreements.length > shown.length && ` and ${c.disagreements.length - shown.length} more`}.
            </p>
          )}
        </details>
      )}
    </section>
  );
}

/** Every question's agreement; `rows` name the questions of row-form sets by their families. */
export function AgreementList(props: { list: CriterionAgreement[]; rows: RowRecord[]; raters: Raters }) {
  if (props.list.length === 0) return <p class="muted">No question has rows with both answers.</p>;
  return (
    <div data-testid="agreement-list">
      {props.list.map((c) => (
        <One key={`${c.criterion}|${c.option_ids.join('|')}`} c={c} rows={props.rows} raters={props.raters} />
      ))}
      <details class="details">
        <summary>How to read this</summary>
        <p class="small">
          <strong>Agreement</strong> is how often {props.raters.first} and {props.raters.second} are the same option. <strong>κ</strong> and <strong>α</strong> correct that
          for chance: answering the commonest option every time agrees often and scores 0. Each figure comes with the range its true value most likely lies in (95%), from
          resampling the eval set’s groups of rows.
        </p>
      </details>
    </div>
  );
}
