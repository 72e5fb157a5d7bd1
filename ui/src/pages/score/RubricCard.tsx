// Step 2 of the Score page: the rubric, opened, written in the form, or saved — to a file, or to
// My rubrics (kept in the app); with My rubrics and the rubric files opened lately.
import { useState } from 'preact/hooks';
import { RubricEditor } from '../../components/RubricEditor';
import { Busy, Card, Empty, ErrorBox, Notice } from '../../components/ui';
import { baseName } from '../../lib/format';
import { type RubricDraft, TYPE_WORDS } from '../../lib/rubric';
import type { RubricEntry } from '../../types';
import { RecentFiles } from './TextsCard';
import type { RubricState } from './useScore';

/** The rubric in a few lines: its name, where it came from, and each question with its answers. */
function RubricSummary(props: { draft: RubricDraft; from: string }) {
  const { draft } = props;
  return (
    <div class="rubric-summary" data-testid="rubric-summary">
      <p>
        <strong>{draft.name || 'Untitled rubric'}</strong>
        {draft.description && <span class="muted"> — {draft.description}</span>}
        {props.from && (
          <span class="muted small" title={props.from}>
            {' '}
            · {baseName(props.from)}
          </span>
        )}
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

/** My rubrics: the rubrics kept in the app, each with its questions' count, to open or delete
 * (a delete asks once more, in place). */
function RubricLibrary(props: { rubric: RubricState }) {
  const { library, busy } = props.rubric;
  const [confirming, setConfirming] = useState<string | null>(null);
  return (
    <details class="rubric-library" data-testid="rubric-library" open={library.length > 0}>
      <summary>
        My rubrics <span class="muted">({library.length})</span>
      </summary>
      {library.length === 0 ? (
        <p class="muted small">None yet. “Save to My rubrics” keeps a rubric here, in the app, to open again with one press.</p>
      ) : (
        <ul class="library-list">
          {library.map((e: RubricEntry) => (
            <li key={e.path} class="row wrap" data-testid="library-rubric" data-name={e.name}>
              <span title={e.path}>
                <strong>{e.name}</strong>{' '}
                <span class="muted small">
                  · {e.criteria} question{e.criteria === 1 ? '' : 's'}
                </span>
              </span>
              <span class="spacer" />
              {confirming === e.path ? (
                <>
                  <span class="small">Delete “{e.name}” from My rubrics?</span>
                  <button type="button" class="danger-button" onClick={() => void props.rubric.deleteFromLibrary(e).then(() => setConfirming(null))} data-testid="library-delete-yes">
                    Delete
                  </button>
                  <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                    Keep it
                  </button>
                </>
              ) : (
                <>
                  <button type="button" class="secondary" onClick={() => void props.rubric.openFromLibrary(e)} disabled={!!busy} data-testid="library-open">
                    Open
                  </button>
                  <button type="button" class="link" onClick={() => setConfirming(e.path)} data-testid="library-delete">
                    Delete
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </details>
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
          <button type="button" class="secondary" onClick={props.rubric.saveToLibrary} disabled={problems.length > 0 || !!busy} data-testid="save-to-library">
            Save to My rubrics
          </button>
          <button type="button" class="secondary" onClick={props.rubric.save} disabled={problems.length > 0 || !!busy}>
            Save rubric…
          </button>
        </div>
      )}
      <RecentFiles title="Recent rubric files:" paths={props.rubric.recent} onOpen={(p) => void props.rubric.openPath(p)} testid="recent-rubrics" disabled={!!busy} />
      <RubricLibrary rubric={props.rubric} />
    </Card>
  );
}
