// How far to trust the judge, from the person's labels (the library's report): per question, how
// often the judge agrees with the person (raw, Cohen's κ, Krippendorff's α, each with its 95%
// interval), where they differ, and each option's share of all texts — the judge's alone, the
// labels' alone, and the judge's corrected by the labels — with the labels a precision would take.
import { Badge, Busy, Card, ErrorBox } from '../../components/ui';
import { pct } from '../../lib/format';
import { agreementSentence, figure, optionIdWords, optionWords, flat, share, shareRange, shareSentence } from '../../lib/review';
import type { CriterionReport, Report, ReviewCriterion, ReviewView } from '../../types';
import { AgreementMetrics } from '../../components/Agreement';
import { FitJudge, type Judge } from './FitJudge';
import type { ReviewState } from './useReview';

/** Judge (rows) against the person (columns). */
function Confusion(props: { c: ReviewCriterion; counts: number[][] }) {
  const { c, counts } = props;
  const max = Math.max(1, ...counts.flat());
  return (
    <div class="scroll-x">
      <table class="confusion" data-testid="review-confusion">
        <thead>
          <tr>
            <th class="corner">judge said ↓ / you said →</th>
            {c.options.map((o, k) => (
              <th key={o.id} scope="col" title={o.description}>
                {optionWords(c, k)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {counts.map((row, g) => (
            <tr key={g}>
              <th scope="row" title={c.options[g]?.description}>
                {optionWords(c, g)}
              </th>
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

function Shares(props: { c: ReviewCriterion; cr: CriterionReport; report: Report; target: string }) {
  const { c, cr, report } = props;
  const weighted = cr.rates.some((r) => r.method === 'active');
  const corrected = cr.rates.filter((r) => r.corrected);
  return (
    <>
      <div class="scroll-x">
        <table class="table compact shares" data-testid="review-shares">
          <thead>
            <tr>
              <th>Option</th>
              <th class="num" title="The judge’s average probability of this option over all texts. It has no interval: on its own it cannot tell how wrong the judge is.">
                Judge alone
              </th>
              <th class="num" title={weighted ? 'Your labels alone, each weighted by how likely the text was to be drawn (Horvitz–Thompson), with the 95% interval.' : 'Your labels alone: their share, with the 95% interval.'}>
                Your labels alone
              </th>
              <th
                class="num"
                title={`The judge’s answers on all ${report.texts} texts, corrected by how it differs from you on the texts you labelled (${weighted ? 'active inference: each label weighted by how likely its text was to be drawn' : 'prediction-powered inference'}), with the 95% interval: the share to quote.`}
              >
                Corrected (95% interval)
              </th>
              <th class="num" title={`Labels of texts drawn at random that would bring the corrected interval to ± ${props.target}%.`}>
                Labels for ± {props.target}%
              </th>
            </tr>
          </thead>
          <tbody>
            {cr.rates.map((r) => {
              const k = c.options.findIndex((o) => o.id === r.option);
              return (
                <tr key={r.option} data-testid="review-share" data-option={r.option}>
                  <td title={c.options[k]?.description}>{optionIdWords(c, r.option)}</td>
                  <td class="num">{share(r.judge_only)}</td>
                  <td class="num">{r.labels_only ? shareRange(r.labels_only) : '—'}</td>
                  <td class="num strong" data-testid="corrected">
                    {r.corrected ? shareRange(r.corrected) : '—'}
                  </td>
                  {/* (A share whose labels all agree has no spread to extrapolate from yet: no count is shown for it.) */}
                  <td
                    class="num"
                    data-testid="labels-for-target"
                    title={r.labels_for_target == null || (r.corrected && flat(r.corrected)) ? 'Cannot be said yet: too few labels (or all alike), or a precision finer than the judge allows.' : undefined}
                  >
                    {r.corrected && flat(r.corrected) ? '—' : (r.labels_for_target ?? '—')}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {corrected.length > 0 ? (
        <ul class="share-words" data-testid="share-words">
          {corrected.map((r) => {
            const k = c.options.findIndex((o) => o.id === r.option);
            return r.corrected && <li key={r.option}>{shareSentence(c, k, r.corrected, report.texts)}</li>;
          })}
        </ul>
      ) : (
        <p class="muted small">The corrected shares need at least two texts you answered on this question.</p>
      )}
    </>
  );
}

function CriterionSummary(props: { c: ReviewCriterion; cr: CriterionReport; report: Report; v: ReviewView; review: ReviewState; target: string }) {
  const { c, cr, v } = props;
  const a = cr.agreement;
  const raw = figure(a.raw, 'share');
  const scored = c.type === 'score';
  return (
    <section class="criterion-summary" data-testid="criterion-summary" data-criterion={c.name}>
      <h3 class="sub">
        {c.name.replace(/_/g, ' ')} <span class="muted small">{c.instructions}</span>
      </h3>
      <p class="agreement-words" data-testid="agreement-words">
        <strong>{agreementSentence(a)}</strong>
        {a.n > 0 && a.raw.value !== null && (
          <span class="muted">
            {' '}
            That is {raw.value} ({raw.interval}, the range the true figure most likely lies in).
          </span>
        )}
      </p>
      <AgreementMetrics
        a={a}
        levels={scored}
        rawHelp="The share of texts where the judge gave your answer, with its 95% interval (resampled over the texts)."
        levelsNote=" Levels are treated as numbers (a level apart is a small disagreement)."
        testid="metric"
      />
      <h4 class="sub-sm">How many of all {props.report.texts} texts have each answer</h4>
      <Shares c={c} cr={cr} report={props.report} target={props.target} />
      {a.n > 0 && (
        <details class="details">
          <summary>
            Judge against you ({a.n} text{a.n === 1 ? '' : 's'}){cr.disagreements.length > 0 && <> · {cr.disagreements.length} disagreement{cr.disagreements.length === 1 ? '' : 's'}</>}
          </summary>
          <Confusion c={c} counts={a.confusion} />
        </details>
      )}
      {cr.disagreements.length > 0 && (
        <div class="disagreements" data-testid="disagreements">
          <p class="small strong">Where you differ ({cr.disagreements.length}):</p>
          <ul class="plain-list">
            {cr.disagreements.map((d) => {
              const pos = v.queue.findIndex((i) => i.index === d.index);
              const item = v.queue[pos];
              return (
                <li key={d.index} data-testid="disagreement">
                  <button type="button" class="link" onClick={() => props.review.goTo(pos)} title="Open this text">
                    {d.id ?? `#${d.index + 1}`}
                  </button>{' '}
                  the judge: <strong>{optionIdWords(c, d.judge)}</strong>, you: <strong>{optionIdWords(c, d.person)}</strong>
                  {item && <span class="muted small disagreement-text"> · {item.text}</span>}
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </section>
  );
}

export function ReviewSummary(props: { review: ReviewState; judge: Judge }) {
  const r = props.review;
  const v = r.view;
  const state = r.report;
  const report = state.status === 'done' ? state.report : state.status !== 'idle' ? state.last : undefined;
  if (!v) return null;
  return (
    <Card title="How far to trust the judge" testid="review-summary">
      <div class="row wrap">
        <p data-testid="summary-counts">
          {report ? (
            <>
              From your labels on <strong>{report.labelled}</strong> of the {report.texts} texts{report.skipped > 0 && <> ({report.skipped} skipped)</>}.
              {report.off_draw > 0 && <span class="muted"> {report.off_draw} labelled out of the draw’s order count for agreement only.</span>}
            </>
          ) : (
            'Reading your labels…'
          )}
        </p>
        <span class="spacer" />
        <label for="review-target" class="small" title="How close to the truth you want each corrected share to be (half the width of its 95% interval), for the labels-needed column.">
          Precision wanted ±
        </label>
        <input
          id="review-target"
          type="number"
          min={1}
          max={50}
          step={1}
          class="percent"
          value={r.target}
          onInput={(e) => r.setTarget(e.currentTarget.value)}
          data-testid="review-target"
        />
        <span class="small">%</span>
      </div>
      {state.status === 'loading' && !report && <Busy label="Computing agreement and shares…" />}
      {state.status === 'loading' && report && (
        <p class="muted small" role="status">
          Updating…
        </p>
      )}
      {state.status === 'error' && <ErrorBox title="The summary could not be computed" message={state.message} onRetry={r.loadReport} testid="review-report-error" />}
      {report && report.labelled === 0 && (
        <p class="notice notice-warn" data-testid="summary-empty">
          Label a few texts first: the agreement appears from the first label, the corrected shares from two.
        </p>
      )}
      {report &&
        report.criteria.map((cr) => {
          const c = v.criteria.find((x) => x.name === cr.criterion);
          return c && <CriterionSummary key={cr.criterion} c={c} cr={cr} report={report} v={v} review={r} target={r.target} />;
        })}
      {report && <FitJudge review={r} judge={props.judge} />}
      <details class="details">
        <summary>How to read this</summary>
        <p class="small">
          The judge answered every text; you answered some. <Badge kind="info">Agreement</Badge> is how often it gave your answer. κ and α correct that for chance: a judge that
          always says “no” agrees often when most texts are “no”, and scores 0. The <strong>corrected share</strong> starts from the judge’s answers on all texts and removes its
          mistakes as measured on yours, so it is right on average even when the judge is biased; its interval narrows as you label more. Texts were drawn for you least sure
          first, by a recorded random draw ({v.draw.by === 'uncertainty' ? `${pct(v.draw.uniform_share, 0)} of each text’s chance uniform` : 'uniform'}), and the shares weigh each
          label by its text’s chance, so you can stop at any text.
        </p>
      </details>
    </Card>
  );
}
