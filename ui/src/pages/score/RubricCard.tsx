// Step 2 of the Score page: the rubric, opened, written in the form, or saved.
import { RubricEditor } from '../../components/RubricEditor';
import { Busy, Card, Empty, ErrorBox, Notice } from '../../components/ui';
import { type RubricDraft, TYPE_WORDS } from '../../lib/rubric';
import type { RubricState } from './useScore';

/** The rubric in a few lines: its name, where it came from, and each question with its answers. */
function RubricSummary(props: { draft: RubricDraft; from: string }) {
  const { draft } = props;
  return (
    <div class="rubric-summary" data-testid="rubric-summary">
      <p>
        <strong>{draft.name || 'Untitled rubric'}</strong>
        {draft.description && <span class="muted"> — {draft.description}</span>}
        {props.from && <span class="muted mono small"> · {props.from}</span>}
      </p>
      <ol>
        {draft.criteria.map((c) => (
          <li key={c.key}>
            <strong>{c.name}</strong> <span class="muted">({TYPE_WORDS[c.type]})</span>: {c.instructions}
            <span class="muted small">
              {' '}
              {c.type === 'choice' && `— ${c.options.map((o) => o.id).join(', ')}`}
              {c.type === 'noul' && `— yes / no${c.rule ? `; rule: ${c.rule}` : ''}`}
              {c.type === 'score' && `— ${c.levels.length} levels, from “${c.levels[0]}” to “${c.levels[c.levels.length - 1]}”`}
            </span>
          </li>
        ))}
      </ol>
    </div>
  );
}

export function RubricCard(props: { rubric: RubricState }) {
  const { draft, editing, busy, error, note, problems } = props.rubric;
  return (
    <Card
      step={2}
      title="Rubric"
      testid="rubric-card"
      actions={
        <>
          <button type="button" class="secondary" onClick={props.rubric.open} disabled={!!busy}>
            Open a saved rubric…
          </button>
          <button type="button" class="secondary" onClick={props.rubric.startNew}>
            New rubric
          </button>
        </>
      }
    >
      {busy && <Busy label={busy} />}
      {error && <ErrorBox title="The rubric could not be used" message={error} />}
      {note && <Notice>{note}</Notice>}
      {!draft && !busy && <Empty title="No rubric yet">Open a saved rubric, or press “New rubric” to write one: each question has a type and its answers.</Empty>}
      {draft && !editing && <RubricSummary draft={draft} from={props.rubric.from} />}
      {draft && editing && <RubricEditor draft={draft} onChange={props.rubric.setDraft} />}
      {draft && problems.length > 0 && editing && (
        <ul class="problems" data-testid="rubric-problems">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      {draft && (
        <div class="row">
          <button type="button" class="secondary" onClick={props.rubric.toggleEditing}>
            {editing ? 'Done editing' : 'Edit'}
          </button>
          <button type="button" class="secondary" onClick={props.rubric.save} disabled={problems.length > 0 || !!busy}>
            Save rubric…
          </button>
        </div>
      )}
    </Card>
  );
}
