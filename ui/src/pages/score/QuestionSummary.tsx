// The summary per question above the answers: the share of texts that got each answer (the
// library's counts, `answers_summary`). A count is a button that shows only those texts; pressed
// again, or "Show all", it shows every text.
import { optionWords, shareOf } from '../../lib/answers';
import type { QuestionSummary as Summary } from '../../types';

/** Which texts the table shows: those whose answer to `criterion` is `option` (null: no answer). */
export type Filter = { criterion: string; option: string | null } | null;

function Count(props: { n: number; of: number; label: string; active: boolean; onClick: () => void; option: string | null }) {
  return (
    <button
      type="button"
      class={`summary-count ${props.active ? 'is-active' : ''}`}
      data-testid="summary-filter"
      data-count={props.n}
      data-option={props.option ?? ''}
      aria-pressed={props.active ? 'true' : 'false'}
      title={`${props.n} of ${props.of} text${props.of === 1 ? '' : 's'}: show only ${props.n === 1 ? 'it' : 'them'}`}
      onClick={props.onClick}
    >
      <strong>{shareOf(props.n, props.of)}</strong> {props.label} <span class="muted">({props.n})</span>
    </button>
  );
}

export function QuestionSummary(props: { summary: Summary[]; filter: Filter; onFilter: (f: Filter) => void }) {
  const { filter, onFilter } = props;
  const toggle = (criterion: string, option: string | null) =>
    onFilter(filter && filter.criterion === criterion && filter.option === option ? null : { criterion, option });
  return (
    <div class="question-summary" data-testid="question-summary">
      {props.summary.map((q) => {
        // Named answers, most frequent first; levels and yes/no in their own order.
        const options = q.type === 'choice' ? [...q.options].sort((a, b) => b.count - a.count) : q.options;
        const none = options.filter((o) => o.count === 0);
        return (
          <div class="summary-row" key={q.criterion} data-question={q.criterion}>
            <span class="summary-name">{q.criterion.replace(/_/g, ' ')}</span>
            <span class="summary-counts">
              {options
                .filter((o) => o.count > 0)
                .map((o) => (
                  <Count
                    key={o.id}
                    n={o.count}
                    of={q.texts}
                    option={o.id}
                    label={optionWords(q.type, o.id, o.description)}
                    active={filter?.criterion === q.criterion && filter.option === o.id}
                    onClick={() => toggle(q.criterion, o.id)}
                  />
                ))}
              {q.no_answer > 0 && (
                <Count
                  n={q.no_answer}
                  of={q.texts}
                  option={null}
                  label="no answer"
                  active={filter?.criterion === q.criterion && filter.option === null}
                  onClick={() => toggle(q.criterion, null)}
                />
              )}
              {none.length > 0 && (
                <span class="muted small" data-testid="summary-none">
                  no text got: {none.map((o) => optionWords(q.type, o.id, o.description)).join(', ')}
                </span>
              )}
            </span>
          </div>
        );
      })}
      {filter && (
        <div class="row">
          <span class="small" data-testid="summary-showing">
            Showing the texts whose {filter.criterion.replace(/_/g, ' ')} is{' '}
            {filter.option === null
              ? 'not answered'
              : (() => {
                  const q = props.summary.find((x) => x.criterion === filter.criterion);
                  const o = q?.options.find((x) => x.id === filter.option);
                  return q && o ? optionWords(q.type, o.id, o.description) : filter.option;
                })()}
            .
          </span>
          <button type="button" class="link" data-testid="summary-show-all" onClick={() => onFilter(null)}>
            Show all
          </button>
        </div>
      )}
    </div>
  );
}
