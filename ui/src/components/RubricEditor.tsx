// The rubric form: questions, each with its type, the question to ask, and its answers.
import type { QuestionKind } from '../types';
import { type CriterionDraft, newCriterion, type RubricDraft } from '../lib/rubric';

const TYPES: { id: QuestionKind; label: string; help: string }[] = [
  { id: 'choice', label: 'Choice', help: 'pick one of named answers' },
  { id: 'noul', label: 'Yes / no', help: 'answer yes or no, with an optional rule' },
  { id: 'score', label: 'Score', help: 'pick a level on an ordered scale' },
];

function CriterionForm(props: {
  c: CriterionDraft;
  index: number;
  count: number;
  onChange: (c: CriterionDraft) => void;
  onRemove: () => void;
  onMove: (delta: number) => void;
}) {
  const { c, index } = props;
  const set = (patch: Partial<CriterionDraft>) => props.onChange({ ...c, ...patch });
  const id = `q${c.key}`;
  return (
    <fieldset class="criterion" data-testid="criterion-form">
      <legend class="sr-only">Question {index + 1}</legend>
      <div class="criterion-head">
        <strong aria-hidden="true">Question {index + 1}</strong>
        <span class="spacer" />
        <button type="button" class="icon" title="Move up" aria-label="Move question up" disabled={index === 0} onClick={() => props.onMove(-1)}>
          ↑
        </button>
        <button type="button" class="icon" title="Move down" aria-label="Move question down" disabled={index === props.count - 1} onClick={() => props.onMove(1)}>
          ↓
        </button>
        <button type="button" class="icon danger" title="Remove this question" aria-label="Remove question" onClick={props.onRemove}>
          ✕
        </button>
      </div>
      <div class="form-grid">
        <label for={`${id}-name`}>Short name</label>
        <input id={`${id}-name`} value={c.name} placeholder="e.g. topic" onInput={(e) => set({ name: e.currentTarget.value })} />
        <span class="label">Type</span>
        <div class="segmented" role="radiogroup" aria-label="Question type">
          {TYPES.map((t) => (
            <label key={t.id} class={c.type === t.id ? 'on' : ''} title={t.help}>
              <input type="radio" name={`${id}-type`} value={t.id} checked={c.type === t.id} onChange={() => set({ type: t.id })} />
              {t.label}
            </label>
          ))}
        </div>
        <label for={`${id}-instr`}>Question to ask</label>
        <input id={`${id}-instr`} value={c.instructions} placeholder="e.g. What is the message mainly about?" onInput={(e) => set({ instructions: e.currentTarget.value })} />
      </div>

      {c.type === 'choice' && (
        <div class="answers">
          <div class="answers-head">
            <span>Answer name</span>
            <span>What it means (shown to the model)</span>
          </div>
          {c.options.map((o, i) => (
            <div class="answer-row" key={i}>
              <input
                aria-label={`Answer ${i + 1} name`}
                value={o.id}
                placeholder={`e.g. ${['billing', 'technical', 'account', 'other'][i] ?? 'other'}`}
                onInput={(e) => set({ options: c.options.map((x, j) => (j === i ? { ...x, id: e.currentTarget.value } : x)) })}
              />
              <input
                aria-label={`Answer ${i + 1} description`}
                value={o.description}
                placeholder="Describe this answer"
                onInput={(e) => set({ options: c.options.map((x, j) => (j === i ? { ...x, description: e.currentTarget.value } : x)) })}
              />
              <button type="button" class="icon" aria-label={`Remove answer ${i + 1}`} title="Remove this answer" disabled={c.options.length <= 2} onClick={() => set({ options: c.options.filter((_, j) => j !== i) })}>
                ✕
              </button>
            </div>
          ))}
          <button type="button" class="link" disabled={c.options.length >= 26} onClick={() => set({ options: [...c.options, { id: '', description: '' }] })}>
            + Add an answer
          </button>
        </div>
      )}

      {c.type === 'noul' && (
        <div class="answers">
          <label for={`${id}-rule`}>
            Rule <span class="muted">(optional, shown under the question; answers are Yes / No)</span>
          </label>
          <textarea id={`${id}-rule`} rows={2} value={c.rule} placeholder="e.g. A request for a refund or a credit counts as asking for money back." onInput={(e) => set({ rule: e.currentTarget.value })} />
        </div>
      )}

      {c.type === 'score' && (
        <div class="answers">
          <div class="answers-head">
            <span>Levels, lowest first</span>
          </div>
          {c.levels.map((l, i) => (
            <div class="answer-row level-row" key={i}>
              <span class="level-no">{i}</span>
              <input
                aria-label={`Level ${i}`}
                value={l}
                placeholder={i === 0 ? 'Lowest level' : `Level ${i}`}
                onInput={(e) => set({ levels: c.levels.map((x, j) => (j === i ? e.currentTarget.value : x)) })}
              />
              <button type="button" class="icon" aria-label={`Remove level ${i}`} title="Remove this level" disabled={c.levels.length <= 2} onClick={() => set({ levels: c.levels.filter((_, j) => j !== i) })}>
                ✕
              </button>
            </div>
          ))}
          <button type="button" class="link" disabled={c.levels.length >= 26} onClick={() => set({ levels: [...c.levels, ''] })}>
            + Add a level
          </button>
        </div>
      )}
    </fieldset>
  );
}

export function RubricEditor(props: { draft: RubricDraft; onChange: (d: RubricDraft) => void }) {
  const d = props.draft;
  const setCriteria = (criteria: CriterionDraft[]) => props.onChange({ ...d, criteria });
  return (
    <div class="rubric-editor" data-testid="rubric-editor">
      <div class="form-grid">
        <label for="rubric-name">Rubric name</label>
        <input id="rubric-name" value={d.name} placeholder="e.g. support-ticket" onInput={(e) => props.onChange({ ...d, name: e.currentTarget.value })} />
        <label for="rubric-desc">Description</label>
        <input id="rubric-desc" value={d.description} placeholder="Optional, for people" onInput={(e) => props.onChange({ ...d, description: e.currentTarget.value })} />
      </div>
      {d.criteria.map((c, i) => (
        <CriterionForm
          key={c.key}
          c={c}
          index={i}
          count={d.criteria.length}
          onChange={(nc) => setCriteria(d.criteria.map((x) => (x.key === c.key ? nc : x)))}
          onRemove={() => setCriteria(d.criteria.filter((x) => x.key !== c.key))}
          onMove={(delta) => {
            const next = [...d.criteria];
            const j = i + delta;
            [next[i], next[j]] = [next[j], next[i]];
            setCriteria(next);
          }}
        />
      ))}
      <button type="button" class="secondary" onClick={() => setCriteria([...d.criteria, newCriterion()])}>
        + Add a question
      </button>
    </div>
  );
}
