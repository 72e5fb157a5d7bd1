// One text at a time: the text, and for each question the options as buttons, each with the
// judge's probability beside it. The keys answer the highlighted question (1–9), go on (Enter or
// →), back (←), skip (S) and undo (Backspace or U); every answer is saved at once.
import { useEffect, useRef } from 'preact/hooks';
import { Badge, Card, Notice } from '../../components/ui';
import { pct } from '../../lib/format';
import { doubtWords, optionWords } from '../../lib/review';
import type { CriterionResult, ReviewCriterion, ReviewItem } from '../../types';
import { isDone, type ReviewState } from './useReview';

/** What the judge said about one question, in words. */
function JudgeNote(props: { j: CriterionResult; c: ReviewCriterion }) {
  const { j, c } = props;
  const chosen = j.chosen === null ? -1 : c.options.findIndex((o) => o.id === j.chosen);
  return (
    <p class="muted small judge-note">
      {chosen < 0 ? (
        <>The judge gave no answer{j.abstained === 'letter_mass' ? ' (none of the options seemed to fit)' : ' (it was unsure)'}.</>
      ) : (
        <>
          The judge said <strong>{optionWords(c, chosen)}</strong> ({pct(j.probability, 0)}, {pct(j.margin, 0)} ahead of the next).
        </>
      )}{' '}
      {j.close && (
        <Badge kind="close" title="The top two answers are less than 10 points apart: the judge is unsure.">
          close
        </Badge>
      )}{' '}
      {j.order_unstable === true && (
        <Badge kind="unstable" title="The answer changed when the options were shown in another order.">
          order-unstable
        </Badge>
      )}
    </p>
  );
}

function Question(props: { c: ReviewCriterion; ci: number; item: ReviewItem; current: boolean; review: ReviewState }) {
  const { c, ci, item, current, review } = props;
  const j = item.judge[ci];
  const mine = item.labels?.[ci] ?? null;
  return (
    <section class={`question ${current ? 'current' : ''}`} data-testid="question" data-criterion={c.name} data-current={current ? 'yes' : 'no'}>
      <div class="question-head">
        <button type="button" class="link question-name" onClick={() => review.focusCriterion(ci)} title="Answer this question with the keys">
          {c.name.replace(/_/g, ' ')}
        </button>
        <span class="muted">{c.instructions}</span>
        {current && (
          <span class="key-hint" data-testid="key-hint">
            keys 1–{Math.min(9, c.options.length)}
          </span>
        )}
      </div>
      {c.rule && <p class="muted small">{c.rule}</p>}
      <div class="choices">
        {c.options.map((o, k) => {
          const p = j?.options[k]?.probability ?? 0;
          const judges = j?.chosen === o.id;
          return (
            <button
              key={o.id}
              type="button"
              class={`choice ${mine === k ? 'mine' : ''} ${judges ? 'judges' : ''}`}
              aria-pressed={mine === k}
              title={o.description}
              onClick={(e) => {
                (e.currentTarget as HTMLButtonElement).blur();
                review.answer(ci, k);
              }}
              data-testid="choice"
              data-option={o.id}
            >
              <span class="choice-top">
                <span class="key" aria-hidden="true">
                  {k < 9 ? k + 1 : ''}
                </span>
                <span class="choice-name">{optionWords(c, k)}</span>
                {mine === k && <span class="badge badge-ok">you</span>}
                {judges && <span class="badge badge-info">judge</span>}
              </span>
              {c.type === 'choice' && <span class="choice-desc">{o.description}</span>}
              <span class="choice-prob" title={`The judge gives this option ${pct(p, 1)}`}>
                <span class="bar small" aria-hidden="true">
                  <span class="bar-fill" style={{ width: `${Math.round(p * 100)}%` }} />
                </span>
                <span class="prob">{pct(p, 0)}</span>
              </span>
            </button>
          );
        })}
      </div>
      {j && <JudgeNote j={j} c={c} />}
    </section>
  );
}

/** Whether a key press belongs to a field being typed in (then it is not a review key). */
const typing = (t: EventTarget | null) => t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));

export function LabelOne(props: { review: ReviewState }) {
  const r = props.review;
  const panel = useRef<HTMLDivElement>(null);
  const v = r.view;

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      // Only while this panel is on screen (the Score page can be hidden behind another page).
      if (!panel.current || panel.current.offsetParent === null) return;
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      const k = e.key;
      if (/^[1-9]$/.test(k)) r.answerCurrent(Number(k) - 1);
      else if (k === 'Enter' || k === 'ArrowRight') r.next();
      else if (k === 'ArrowLeft') r.prev();
      else if (k === 'ArrowDown') r.focusCriterion(r.crit + 1);
      else if (k === 'ArrowUp') r.focusCriterion(r.crit - 1);
      else if (k === 's' || k === 'S') r.skip();
      else if (k === 'Backspace' || k === 'u' || k === 'U') r.undo();
      else return;
      e.preventDefault();
    }
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  });

  if (!v) return null;
  const item = v.queue[r.pos];
  if (!item) return <Notice kind="warn">This review has no texts.</Notice>;
  const left = v.queue.filter((i) => !isDone(i)).length;
  const last = r.pos === v.queue.length - 1;
  return (
    <div ref={panel} data-testid="label-panel" data-index={item.index}>
      <Card class="label-card">
        <div class="row wrap label-top">
          <span class="strong" data-testid="label-position">
            Text {r.pos + 1} of {v.queue.length}
          </span>
          {item.id && <span class="mono small muted">{item.id}</span>}
          <span
            class={`badge ${item.uncertainty >= 0.7 ? 'badge-close' : 'badge-info'}`}
            title={`How unsure the judge was about this text, from 0% (sure) to 100%: ${pct(item.uncertainty, 0)}. The least sure texts come first, by a random draw that keeps the corrected counts fair.`}
          >
            judge {doubtWords(item.uncertainty)}
          </span>
          {item.skipped ? (
            <Badge kind="partial">skipped</Badge>
          ) : isDone(item) ? (
            <Badge kind="ok">labelled</Badge>
          ) : null}
          <span class="spacer" />
          <span class="muted small">{left} left</span>
          <button type="button" class="secondary" onClick={r.prev} disabled={r.pos === 0} data-testid="review-prev">
            ← Previous
          </button>
        </div>
        <blockquote class="review-text" data-testid="review-text">
          {item.text}
        </blockquote>
        {v.criteria.map((c, ci) => (
          <Question key={c.name} c={c} ci={ci} item={item} current={ci === r.crit} review={r} />
        ))}
        <div class="row wrap label-actions">
          <button type="button" class="secondary" onClick={r.skip} data-testid="review-skip" title="Pass over this text: it counts as drawn but not labelled.">
            Skip <kbd>S</kbd>
          </button>
          <button type="button" class="secondary" onClick={r.undo} disabled={!r.canUndo} data-testid="review-undo">
            Undo <kbd>U</kbd>
          </button>
          <span class="spacer" />
          {last && isDone(item) && <span class="muted small">That was the last text.</span>}
          <button type="button" class="primary" onClick={r.next} disabled={last} data-testid="review-next">
            Next text <kbd>Enter</kbd>
          </button>
        </div>
        <p class="muted small keys">
          Keys: <kbd>1</kbd>–<kbd>9</kbd> answer the highlighted question (then the next one) · <kbd>Enter</kbd> or <kbd>→</kbd> next text · <kbd>←</kbd> previous ·{' '}
          <kbd>↑</kbd> <kbd>↓</kbd> another question · <kbd>S</kbd> skip · <kbd>Backspace</kbd> or <kbd>U</kbd> undo the last answer
        </p>
      </Card>
    </div>
  );
}
