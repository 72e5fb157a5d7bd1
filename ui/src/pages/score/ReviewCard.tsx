// The Score page's way into a review: check the judge on texts just scored, on an answers file
// `readout score --out` wrote, or go on with a review started earlier (kept across restarts).
import { useState } from 'preact/hooks';
import { errorMessage, pickFile } from '../../api';
import { Busy, Card, ErrorBox } from '../../components/ui';
import { baseName } from '../../lib/format';
import { toRubric } from '../../lib/rubric';
import type { ReviewEntry } from '../../types';
import type { ReviewState } from '../review/useReview';
import type { RubricState, Scoring } from './useScore';

/** "2 June 2025, 09:30" from the review's RFC 3339 time, in the person's time zone. */
function when(created: string): string {
  const d = new Date(created);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

const progress = (e: ReviewEntry) => `${e.labelled} of ${e.texts} labelled`;

/** The three files of an answers file's review, chosen one by one. */
function OpenAnswers(props: { review: ReviewState; onCancel: () => void; answers: string }) {
  const [texts, setTexts] = useState<string | null>(null);
  const [rubric, setRubric] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const pick = async (kind: 'texts' | 'rubric', set: (p: string) => void) => {
    setError(null);
    try {
      const p = await pickFile(kind);
      if (p) set(p);
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const row = (label: string, value: string | null, choose: () => void, testid: string) => (
    <>
      <span class="label">{label}</span>
      <div class="row">
        {value ? (
          <span class="file-chip" data-testid={`${testid}-chip`}>
            <span class="mono small" title={value}>
              {baseName(value)}
            </span>
            <button type="button" class="link" onClick={choose}>
              Change
            </button>
          </span>
        ) : (
          <button type="button" class="secondary" onClick={choose} data-testid={`choose-${testid}`}>
            Choose…
          </button>
        )}
      </div>
    </>
  );
  return (
    <div class="open-answers" data-testid="open-answers">
      <p class="small muted">The answers file needs the texts it was scored from (the same file, in the same order) and its rubric. Your labels are saved beside it.</p>
      <div class="form-grid">
        <span class="label">Answers</span>
        <span class="mono small" title={props.answers}>
          {baseName(props.answers)}
        </span>
        {row('Texts', texts, () => pick('texts', setTexts), 'review-texts')}
        {row('Rubric', rubric, () => pick('rubric', setRubric), 'review-rubric')}
      </div>
      {error && <ErrorBox title="The file could not be chosen" message={error} />}
      <div class="row end">
        <button type="button" class="link" onClick={props.onCancel}>
          Cancel
        </button>
        <button
          type="button"
          class="primary"
          disabled={!texts || !rubric || !!props.review.busy}
          onClick={() => texts && rubric && props.review.openAnswers(props.answers, texts, rubric)}
          data-testid="open-answers-review"
        >
          Review these answers
        </button>
      </div>
    </div>
  );
}

export function ReviewCard(props: { review: ReviewState; scoring: Scoring; rubric: RubricState }) {
  const { review, scoring } = props;
  const [answers, setAnswers] = useState<string | null>(null);
  const [pickError, setPickError] = useState<string | null>(null);
  const run = scoring.run;
  const draft = props.rubric.draft;
  const canStart = run.status === 'done' && run.results.length > 0 && !!draft;
  const [latest, ...earlier] = review.entries;

  async function chooseAnswers() {
    setPickError(null);
    try {
      const p = await pickFile('answers');
      if (p) setAnswers(p);
    } catch (e) {
      setPickError(errorMessage(e));
    }
  }

  return (
    <Card title="Check the judge on your own labels" testid="review-card">
      <p class="muted">
        Label a few texts yourself, the ones the judge was least sure of first. Readout then tells you how often the judge agrees with you, and corrects its counts (how many texts ask
        for a refund, say) with your labels, with how far to trust them.
      </p>
      <div class="row wrap">
        <button
          type="button"
          class="primary"
          disabled={!canStart || !!review.busy}
          title={canStart ? undefined : 'Score some texts first.'}
          onClick={() => run.status === 'done' && draft && review.start(toRubric(draft), run.texts, run.results)}
          data-testid="review-start"
        >
          Review answers
        </button>
        <button type="button" class="secondary" onClick={chooseAnswers} disabled={!!review.busy} data-testid="review-open-answers">
          Open answers file…
        </button>
        {latest && !latest.error && (
          <button type="button" class="secondary" onClick={() => review.continueReview(latest.dir)} disabled={!!review.busy} data-testid="review-continue">
            Continue reviewing {latest.name} <span class="muted small">({progress(latest)})</span>
          </button>
        )}
      </div>
      {!canStart && <p class="muted small">Score texts above to review the judge’s answers to them.</p>}
      {answers && <OpenAnswers review={review} answers={answers} onCancel={() => setAnswers(null)} />}
      {review.busy && <Busy label={review.busy} />}
      {pickError && <ErrorBox title="The answers file could not be chosen" message={pickError} />}
      {review.openError && <ErrorBox title="The review could not be opened" message={review.openError} testid="review-open-error" />}
      {(earlier.length > 0 || latest?.error) && (
        <details class="details" data-testid="review-entries">
          <summary>Earlier reviews ({review.entries.length})</summary>
          <ul class="review-entries">
            {review.entries.map((e) => (
              <li key={e.dir}>
                {e.error ? (
                  <span class="bad small" title={e.error}>
                    {e.name}: cannot be opened ({e.error})
                  </span>
                ) : (
                  <button type="button" class="link" onClick={() => review.continueReview(e.dir)}>
                    {e.name}
                  </button>
                )}{' '}
                <span class="muted small">
                  {when(e.created)} · {progress(e)}
                </span>
              </li>
            ))}
          </ul>
        </details>
      )}
    </Card>
  );
}
