// Every text of the review in the order it is drawn (the judge's least sure likeliest first), with
// the judge's answers, how unsure it was, and the person's labels; a row opens the text to label.
import { Badge, Card } from '../../components/ui';
import { pct } from '../../lib/format';
import { doubtWords, optionWords } from '../../lib/review';
import type { ReviewItem, ReviewView } from '../../types';
import { isDone, type ReviewState } from './useReview';

function Answers(props: { v: ReviewView; item: ReviewItem; whose: 'judge' | 'person' }) {
  const { v, item } = props;
  return (
    <ul class="plain-list">
      {v.criteria.map((c, ci) => {
        let words: string;
        if (props.whose === 'judge') {
          const j = item.judge[ci];
          const k = j?.chosen === null || !j ? -1 : c.options.findIndex((o) => o.id === j.chosen);
          words = k < 0 ? 'no answer' : `${optionWords(c, k)} (${pct(j.probability, 0)})`;
        } else {
          const a = item.labels?.[ci] ?? null;
          words = a === null ? '—' : optionWords(c, a);
        }
        return (
          <li key={c.name}>
            <span class="muted small">{c.name.replace(/_/g, ' ')}:</span> {words}
          </li>
        );
      })}
    </ul>
  );
}

export function ReviewList(props: { review: ReviewState }) {
  const r = props.review;
  const v = r.view;
  if (!v) return null;
  return (
    <Card title="All texts, in the order they are drawn" testid="review-list">
      <p class="muted small">
        The judge’s least sure texts are the likeliest to come first; the order is a random draw, so the corrected counts stay fair wherever you stop. A text you label out of this
        order counts for agreement, not for the corrected counts.
      </p>
      <div class="scroll-x">
        <table class="table review-table" data-testid="review-table">
          <thead>
            <tr>
              <th class="num">#</th>
              <th class="text-col">Text</th>
              <th>The judge</th>
              <th title="How unsure the judge was, from 0% (sure) to 100%">Unsure</th>
              <th>You</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {v.queue.map((item, pos) => (
              <tr key={item.index} class={pos === r.pos ? 'selected' : ''} data-testid="review-row" data-index={item.index} data-state={item.skipped ? 'skipped' : isDone(item) ? 'labelled' : 'open'}>
                <td class="num muted">{pos + 1}</td>
                <td class="text-col">
                  <span class="text-no">{item.id ?? `#${item.index + 1}`}</span>
                  <span class="text-snippet" title={item.text}>
                    {item.text}
                  </span>
                </td>
                <td>
                  <Answers v={v} item={item} whose="judge" />
                </td>
                <td class="nowrap" title={`${pct(item.uncertainty, 0)}: ${doubtWords(item.uncertainty)}`}>
                  <span class="bar small unsure-bar" aria-hidden="true">
                    <span class="bar-fill" style={{ width: `${Math.round(item.uncertainty * 100)}%` }} />
                  </span>
                  <span class="small">{pct(item.uncertainty, 0)}</span>
                </td>
                <td>{item.skipped ? <Badge kind="partial">skipped</Badge> : item.labels ? <Answers v={v} item={item} whose="person" /> : <span class="muted">not yet</span>}</td>
                <td class="actions">
                  <button type="button" class="link" onClick={() => r.goTo(pos)} data-testid="review-row-open">
                    {isDone(item) ? 'Change' : 'Label'}
                  </button>
                  {isDone(item) && (
                    <button type="button" class="link" onClick={() => r.clear(item.index)} data-testid="review-row-clear">
                      Clear
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
