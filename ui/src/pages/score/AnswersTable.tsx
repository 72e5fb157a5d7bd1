// The answers of a scoring job: a row per text (numbered from 1, as every export numbers them), a
// column per question; each cell folds open to every option's probability and the reason when no
// answer was given.
import { Badge } from '../../components/ui';
import { pct } from '../../lib/format';
import { TYPE_WORDS } from '../../lib/rubric';
import type { CriterionResult, ScoreOptions, TextIn, TextResult } from '../../types';

/** Why a criterion got no answer, in words, with the threshold it fell under. */
function abstainWhy(c: CriterionResult, options: ScoreOptions): string {
  if (c.abstained === 'disagreement') {
    return 'No answer: the judges do not all choose the same option.';
  }
  if (c.abstained === 'letter_mass') {
    return `No answer: the answer letters got ${pct(c.letter_mass, 0)} of the model's next-token probability, under the ${pct(options.abstainLetterMass, 0)} asked for. None of the options seems to fit.`;
  }
  return `No answer: the likeliest option has ${pct(c.probability, 0)}, under the ${pct(options.abstainBelow, 0)} asked for. The model is unsure.`;
}

function Cell(props: { c: CriterionResult; options: ScoreOptions; badges: boolean }) {
  const c = props.c;
  const chosen = c.options.find((o) => o.id === c.chosen);
  // Abstained: the option with the top probability, shown as the one the model leaned to.
  const top = c.options.reduce((a, b) => (b.probability > a.probability ? b : a), c.options[0]);
  const why = c.abstained ? abstainWhy(c, props.options) : '';
  return (
    <details
      class="answer"
      data-testid="answer-cell"
      data-abstained={c.abstained}
      data-close={c.close ? 'true' : undefined}
      data-unstable={c.order_unstable === true ? 'true' : undefined}
      data-disagree={c.disagree === true ? 'true' : undefined}
    >
      <summary>
        {c.abstained ? (
          <span class="chosen no-answer" title={why} data-testid="no-answer">
            No answer
          </span>
        ) : (
          <span class="chosen" title={chosen?.description}>
            {c.type === 'noul' ? (c.chosen === 'yes' ? 'Yes' : 'No') : c.type === 'score' ? `${c.chosen}: ${chosen?.description ?? ''}` : c.chosen}
          </span>
        )}
        <span class={`prob ${c.abstained ? 'no-answer' : ''}`} data-testid="probability" title={c.abstained ? `The likeliest option (${top?.id}) has ${pct(c.probability, 1)}` : undefined}>
          {pct(c.probability, 0)}
        </span>
        <span class="bar" aria-hidden="true">
          <span class="bar-fill" style={{ width: `${Math.round(c.probability * 100)}%` }} />
        </span>
        <span class="badges">
          {c.abstained === 'confidence' && (
            <Badge kind="abstain" title={why}>
              unsure
            </Badge>
          )}
          {c.abstained === 'letter_mass' && (
            <Badge kind="abstain" title={why}>
              none fits
            </Badge>
          )}
          {props.badges && c.close && (
            <Badge kind="close" title="The top two answers are less than 10 points apart: the model is unsure.">
              close
            </Badge>
          )}
          {c.abstained === 'disagreement' && (
            <Badge kind="abstain" title={why}>
              judges disagree
            </Badge>
          )}
          {props.badges && c.disagree === true && c.abstained !== 'disagreement' && (
            <Badge kind="close" title="The judges do not all choose this answer: see each judge's below.">
              judges disagree
            </Badge>
          )}
          {props.badges && c.order_unstable === true && (
            <Badge kind="unstable" title="The answer changed when the options were shown in another order: do not rely on it.">
              order-unstable
            </Badge>
          )}
        </span>
      </summary>
      <ul class="options" data-testid="options-list">
        {c.options.map((o) => (
          <li key={o.id} class={o.id === c.chosen ? 'is-chosen' : c.abstained && o.id === top?.id ? 'is-top' : ''}>
            <span class="opt-id">{c.type === 'noul' ? o.description : o.id}</span>
            <span class="opt-desc">{c.type === 'choice' || c.type === 'score' ? o.description : ''}</span>
            <span class="bar small" aria-hidden="true">
              <span class="bar-fill" style={{ width: `${Math.round(o.probability * 100)}%` }} />
            </span>
            <span class="prob">{pct(o.probability, 1)}</span>
          </li>
        ))}
      </ul>
      {c.judges && (
        <div class="judges" data-testid="judges">
          <p class="small">
            <strong>Each judge</strong> (the answer above is their {c.judges.every((j) => Math.abs(j.weight - c.judges![0].weight) < 1e-9) ? 'average' : 'weighted average'})
          </p>
          <ul class="judge-list small">
            {c.judges.map((j, k) => {
              const said = j.chosen === null ? 'no answer' : c.type === 'noul' ? (j.chosen === 'yes' ? 'Yes' : 'No') : j.chosen;
              return (
                <li key={k} data-testid="judge-answer" class={j.chosen !== c.chosen ? 'is-top' : ''}>
                  <strong>{said}</strong> {pct(j.probability, 0)}
                  {j.order_unstable === true ? ' (order-unstable)' : ''} — {j.model}
                </li>
              );
            })}
          </ul>
        </div>
      )}
      {c.abstained && (
        <p class="small" data-testid="abstain-why">
          {why}
        </p>
      )}
      <p class="muted small">
        {c.expected_level !== undefined && <>Expected level {c.expected_level.toFixed(2)} · </>}
        Lead over the runner-up {pct(c.margin, 1)}
        {c.close && ' · a close call'}
        {c.order_unstable === null ? ' · option order not checked' : c.order_unstable ? ' · changed when the options were reordered' : ' · same answer in every option order'}
        {c.letter_mass !== undefined && (
          <span title="Share of the model's next-token probability that fell on the answer letters; low values mean the model wanted to say something else.">
            {' '}
            · on the answer letters {pct(c.letter_mass, 0)}
          </span>
        )}
      </p>
    </details>
  );
}

/** The answers, a row per text (numbered from 1) and a column per question. `keep`: the texts
 * (0-based indices) to show, all when absent; `badges`: the close and order-unstable badges on
 * each cell (off when most answers carry one: the verdict gives their count instead). */
export function AnswersTable(props: { texts: TextIn[]; results: TextResult[]; options: ScoreOptions; keep?: Set<number> | null; badges?: boolean }) {
  const names = props.results[0]?.criteria.map((c) => c.criterion) ?? [];
  const types = props.results[0]?.criteria.map((c) => c.type) ?? [];
  const badges = props.badges ?? true;
  const rows = props.keep ? props.results.filter((r) => props.keep?.has(r.index)) : props.results;
  return (
    <div class="scroll-x">
      <table class="table answers-table" data-testid="score-table">
        <thead>
          <tr>
            <th class="text-col">Text</th>
            {names.map((n, i) => (
              <th key={n}>
                {n.replace(/_/g, ' ')} <span class="muted small">({TYPE_WORDS[types[i]]})</span>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const t = props.texts[r.index];
            const id = r.id ?? t?.id;
            return (
              <tr key={r.index} data-number={r.index + 1}>
                <td class="text-col">
                  <span class="text-no">
                    {id ? (
                      <>
                        {id} <span class="muted">· text {r.index + 1}</span>
                      </>
                    ) : (
                      `Text ${r.index + 1}`
                    )}
                  </span>
                  <span class="text-snippet" title={t?.text}>
                    {t?.text}
                  </span>
                </td>
                {r.criteria.map((c) => (
                  <td key={c.criterion}>
                    <Cell c={c} options={props.options} badges={badges} />
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
