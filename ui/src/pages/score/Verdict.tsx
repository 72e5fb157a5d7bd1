// The verdict above the answers: how far to trust them, in one sentence, and the step that would
// help (lib/verdict.ts decides the level and the words); where the figure comes from, folded.
import { debiasWords } from '../../lib/debias';
import { baseName } from '../../lib/format';
import type { Verdict as Words } from '../../lib/verdict';
import type { JudgeRecord } from '../../types';

/** The verdict as one text, for the JSON export. */
export const verdictText = (v: Words): string => [v.headline, v.step, v.orderNote].filter(Boolean).join(' ');

export function Verdict(props: { verdict: Words; record: JudgeRecord | null }) {
  const { verdict: v, record: r } = props;
  return (
    <div class={`verdict verdict-${v.level}`} data-testid="verdict" data-level={v.level} role="status">
      <p class="verdict-line">
        <strong data-testid="verdict-headline">{v.headline}</strong> <span data-testid="verdict-step">{v.step}</span>
      </p>
      {v.orderNote && (
        <p class="small" data-testid="verdict-order">
          {v.orderNote}
        </p>
      )}
      {r && (
        <details class="small muted">
          <summary>Details</summary>
          Mean family balanced accuracy {(r.accuracy * 100).toFixed(1)} %
          {r.chance !== null && <> (guessing {(r.chance * 100).toFixed(1)} %)</>} over {r.rows} questions of {r.eval_set}, {debiasWords(r.debias)}, measured {r.created.slice(0, 10)}: <span class="mono">{baseName(r.file)}</span>, the model's newest complete run in the results
          folder.
        </details>
      )}
    </div>
  );
}
