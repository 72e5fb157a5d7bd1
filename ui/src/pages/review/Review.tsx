// The Review view: a person labels the judge's texts (one at a time, with the keyboard, or from the
// list of all of them) and reads how far to trust the judge (the summary). It takes the Score
// page's place while a review is open.
import { ErrorBox } from '../../components/ui';
import type { Judge } from './FitJudge';
import { LabelOne } from './LabelOne';
import { ReviewList } from './ReviewList';
import { ReviewSummary } from './ReviewSummary';
import type { Mode, ReviewState } from './useReview';

const MODES: { id: Mode; label: string }[] = [
  { id: 'label', label: 'One at a time' },
  { id: 'list', label: 'All texts' },
  { id: 'summary', label: 'Summary' },
];

export function Review(props: { review: ReviewState; judge: Judge }) {
  const r = props.review;
  const v = r.view;
  if (!v) return null;
  const { texts, labelled, skipped } = v.counts;
  return (
    <div class="page review" data-page="review" data-testid="review">
      <header class="page-head review-head">
        <div class="row wrap">
          <h1>Review: {v.name}</h1>
          <span class="spacer" />
          <button type="button" class="secondary" onClick={r.close} data-testid="review-close">
            ← Back to scoring
          </button>
        </div>
        <p class="lead">
          Your answers against the judge’s. <strong data-testid="review-counts">{labelled} of {texts} texts labelled</strong>
          {skipped > 0 && <> · {skipped} skipped</>}
          <span class={`save-state ${r.saving ? 'saving' : ''}`} data-testid="save-state" aria-live="polite">
            {r.saving ? 'Saving…' : labelled + skipped > 0 ? 'Saved' : ''}
          </span>
        </p>
        <p class="muted small" title={v.labels_file}>
          Kept in <span class="mono">{v.labels_file}</span>, written at every answer: close the app at any time and continue later.
        </p>
      </header>
      <div class="segmented review-modes" role="tablist" aria-label="How to review">
        {MODES.map((m) => (
          <label key={m.id} class={r.mode === m.id ? 'on' : ''} data-testid={`review-mode-${m.id}`}>
            <input type="radio" name="review-mode" checked={r.mode === m.id} onChange={() => r.setMode(m.id)} />
            {m.label}
          </label>
        ))}
      </div>
      {r.saveError && <ErrorBox title="That answer was not saved" message={r.saveError} testid="review-save-error" />}
      {r.mode === 'label' && <LabelOne review={r} />}
      {r.mode === 'list' && <ReviewList review={r} />}
      {r.mode === 'summary' && <ReviewSummary review={r} judge={props.judge} />}
    </div>
  );
}
