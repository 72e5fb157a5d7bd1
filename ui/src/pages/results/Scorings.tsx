// Results: the scorings kept in the results folder (every Score the app finished or stopped
// writes one, `readout.scored`), listed newest first; one opened shows its answers as the Score
// page showed them, with the model, rubric and settings that made them.
import { useEffect, useState } from 'preact/hooks';
import { answersSummary, errorMessage, listScored, loadScored } from '../../api';
import { Busy, Card, ErrorBox, Notice } from '../../components/ui';
import { flaggedCount, stoppedWords, textsWith } from '../../lib/answers';
import { tooManyFlagged } from '../../lib/verdict';
import { debiasName } from '../../lib/debias';
import { baseName } from '../../lib/format';
import type { QuestionSummary as Summary, ScoredEntry, ScoredFile, ScoreOptions } from '../../types';
import { AnswersTable } from '../score/AnswersTable';
import { type Filter, QuestionSummary } from '../score/QuestionSummary';

type List = { status: 'loading' } | { status: 'ready'; rows: ScoredEntry[] } | { status: 'error'; message: string };
type Open = { status: 'none' } | { status: 'loading'; file: string } | { status: 'ready'; file: string; scored: ScoredFile; summary: Summary[] } | { status: 'error'; file: string; message: string };


/** "4 Dec 2026, 17:50" in the person's time zone. */
const when = (iso: string) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });
};

function ScoredView(props: { file: string; model: string; scored: ScoredFile; summary: Summary[]; onClose: () => void }) {
  const { scored } = props;
  const [filter, setFilter] = useState<Filter>(null);
  const keep = filter ? textsWith(scored.results, filter.criterion, filter.option) : null;
  // As on the Score page: when half the answers or more are flagged, no cell carries a badge.
  const answers = scored.results.reduce((n, r) => n + r.criteria.length, 0);
  const flagged = flaggedCount(props.summary);
  const badges = !tooManyFlagged(flagged, answers);
  const options: ScoreOptions = {
    abstainBelow: scored.config.abstain_below ?? undefined,
    abstainLetterMass: scored.config.abstain_letter_mass ?? undefined,
  };
  const name = (scored.rubric as { name?: string })?.name ?? 'Scoring';
  return (
    <Card
      title={`${name}: ${scored.results.length} text${scored.results.length === 1 ? '' : 's'} scored`}
      testid="scored-view"
      actions={
        <button type="button" class="secondary" onClick={props.onClose}>
          Close
        </button>
      }
    >
      <dl class="kv">
        <dt>Model</dt>
        <dd data-testid="scored-model">{props.model}</dd>
        <dt>Option order</dt>
        <dd>{debiasName(scored.config.debias)}</dd>
        <dt>Scored</dt>
        <dd>{when(scored.created)}</dd>
        <dt>File</dt>
        <dd class="mono small">{baseName(props.file)}</dd>
      </dl>
      {scored.status === 'partial' && (
        <Notice kind="warn">
          {stoppedWords(
            scored.results.map((r) => r.index),
            scored.texts.length,
          )}
        </Notice>
      )}
      <QuestionSummary summary={props.summary} filter={filter} onFilter={setFilter} />
      {!badges && (
        <p class="muted small" data-testid="scored-flagged">
          {flagged} of {answers} answers are close calls, changed when the options were reordered, or not given: open one to see its figures.
        </p>
      )}
      <AnswersTable texts={scored.texts} results={scored.results} options={options} keep={keep} badges={badges} />
    </Card>
  );
}

/** The scorings card and the one opened; `folder` is the results folder chosen on the page. */
export function Scorings(props: { folder?: string; refresh: number; active: boolean }) {
  const [list, setList] = useState<List>({ status: 'loading' });
  const [open, setOpen] = useState<Open>({ status: 'none' });

  async function load() {
    setList({ status: 'loading' });
    try {
      setList({ status: 'ready', rows: await listScored(props.folder) });
    } catch (e) {
      setList({ status: 'error', message: errorMessage(e) });
    }
  }
  useEffect(() => {
    if (props.active) void load();
  }, [props.folder, props.refresh, props.active]);

  async function show(file: string) {
    setOpen({ status: 'loading', file });
    try {
      const scored = await loadScored(file);
      setOpen({ status: 'ready', file, scored, summary: await answersSummary(scored.results) });
    } catch (e) {
      setOpen({ status: 'error', file, message: errorMessage(e) });
    }
  }

  if (list.status === 'loading') return null;
  if (list.status === 'error') return <ErrorBox title="The scorings in the results folder could not be read" message={list.message} onRetry={() => void load()} testid="scored-error" />;
  return (
    <>
      <Card title="Scored texts" testid="scored-card">
        {list.rows.length === 0 ? (
          <p class="muted small">Every scoring on the Score page is kept here. None yet in this folder.</p>
        ) : (
          <div class="scroll-x">
            <table class="table runs" data-testid="scored-table">
              <thead>
                <tr>
                  <th />
                  <th>when</th>
                  <th>rubric</th>
                  <th class="col-model">model</th>
                  <th class="col-how">option order</th>
                  <th class="num">texts</th>
                </tr>
              </thead>
              <tbody>
                {list.rows.map((r) => (
                  <tr key={r.file} class={open.status !== 'none' && open.file === r.file ? 'selected' : ''}>
                    <td>
                      <button type="button" class="link" onClick={() => void show(r.file)} data-testid="open-scored">
                        Open
                      </button>
                    </td>
                    <td title={r.created}>{when(r.created)}</td>
                    <td data-testid="scored-rubric">{r.rubric || '(no name)'}</td>
                    <td data-testid="scored-model-cell">{r.model}</td>
                    <td>{debiasName(r.debias)}</td>
                    <td class="num" data-testid="scored-texts">
                      {r.status === 'partial' ? `${r.answered} of ${r.texts}` : r.texts}
                      {r.status === 'partial' && <span class="badge badge-partial"> stopped</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
      {open.status === 'loading' && <Busy label="Opening the scoring…" />}
      {open.status === 'error' && <ErrorBox title="The scoring could not be opened" message={open.message} onRetry={() => void show(open.file)} />}
      {open.status === 'ready' && (
        <ScoredView
          key={open.file}
          file={open.file}
          model={(list.rows.find((r) => r.file === open.file)?.model ?? open.scored.model.name)}
          scored={open.scored}
          summary={open.summary}
          onClose={() => setOpen({ status: 'none' })}
        />
      )}
    </>
  );
}
