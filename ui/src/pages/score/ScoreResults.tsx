// The Score page's results area: nothing yet, the progress of a job (with Stop), its error, or
// the answers: the verdict first (how far to trust them), the summary per question (a count
// filters the table), the table, and the exports.
import { useState } from 'preact/hooks';
import { Badge, Busy, Card, Empty, ErrorBox, Notice } from '../../components/ui';
import { flaggedCount, stoppedWords, textsWith } from '../../lib/answers';
import { baseName } from '../../lib/format';
import { verdict } from '../../lib/verdict';
import type { TextResult } from '../../types';
import { AnswersTable } from './AnswersTable';
import { type Filter, QuestionSummary } from './QuestionSummary';
import type { Run, Scoring } from './useScore';
import { Verdict, verdictText } from './Verdict';

function Progress(props: { run: Extract<Run, { status: 'running' }>; onStop: () => void }) {
  const { run } = props;
  return (
    <div data-testid="score-progress">
      <Busy label={run.stopping ? `Stopping after the text being scored…` : `Scored ${run.done} of ${run.count} text${run.count === 1 ? '' : 's'}…`}>
        {run.debias === 'none' ? 'One forward pass per question.' : 'The options are scored in several orders, so this takes longer.'}
      </Busy>
      <div class="progress-wrap">
        <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={run.count} aria-valuenow={run.done} aria-label="Texts scored">
          <div class="progress-fill" style={{ width: `${((run.done / Math.max(1, run.count)) * 100).toFixed(1)}%` }} />
        </div>
      </div>
      <div class="row end">
        <button type="button" class="secondary" data-testid="stop-score" disabled={run.stopping} onClick={props.onStop}>
          Stop
        </button>
      </div>
    </div>
  );
}

function Answers(props: { run: Extract<Run, { status: 'done' }>; scoring: Scoring }) {
  const { run, scoring } = props;
  const [filter, setFilter] = useState<{ results: TextResult[]; filter: Filter }>({ results: run.results, filter: null });
  // A filter belongs to the answers it was chosen on: new answers show every text.
  const active = filter.results === run.results ? filter.filter : null;
  const v = verdict({
    record: run.judge,
    texts: run.results.length,
    answers: run.summary.reduce((n, q) => n + q.texts, 0),
    flagged: flaggedCount(run.summary),
    orderChecked: run.summary.some((q) => q.order_unstable !== null),
  });
  const keep = active ? textsWith(run.results, active.criterion, active.option) : null;
  return (
    <Card
      title="Answers"
      actions={
        <>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('sheet')} data-testid="export-sheet" title="One row per text, the answers in words: for Excel, Numbers or Google Sheets.">
            Export for spreadsheets
          </button>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('summary')} data-testid="export-summary" title="The share of texts per answer, one row per question and answer.">
            Export summary
          </button>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('csv')} data-testid="export-csv" title="One row per text and question, with every figure (the command line's table).">
            Export CSV
          </button>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('json', verdictText(v))} data-testid="export-json" title="The verdict, the summary and every answer with its figures.">
            Export JSON
          </button>
        </>
      }
    >
      {run.results.length < run.texts.length && (
        <Notice kind="warn">
          <span data-testid="stopped-note">
            {stoppedWords(
              run.results.map((r) => r.index),
              run.texts.length,
            )}
          </span>
        </Notice>
      )}
      <Verdict verdict={v} record={run.judge} />
      {scoring.exportNote && (
        <div data-testid="export-note">
          <Notice>{scoring.exportNote}</Notice>
        </div>
      )}
      {scoring.exportError && <ErrorBox title="The export failed" message={scoring.exportError} />}
      <QuestionSummary summary={run.summary} filter={active} onFilter={(f) => setFilter({ results: run.results, filter: f })} />
      <p class="muted small">
        Click an answer to see every option.{' '}
        {v.badgeCells ? (
          <>
            <Badge kind="close">close</Badge> the top two are within 10 points.{' '}
          </>
        ) : (
          <span data-testid="badges-off">Half or more of the answers are flagged (see above), so no answer carries a badge: open one to see its figures. </span>
        )}
        {run.options.calibration && (
          <span data-testid="scored-with-temperature">
            Probabilities adjusted by the temperature in <span class="mono">{baseName(run.options.calibration)}</span>.{' '}
          </span>
        )}
        {(run.options.abstainBelow !== undefined || run.options.abstainLetterMass !== undefined) && (
          <>
            <Badge kind="abstain">unsure</Badge> / <Badge kind="abstain">none fits</Badge> no answer was given.{' '}
          </>
        )}
        {run.debias !== 'none'
          ? v.badgeCells && (
              <>
                <Badge kind="unstable">order-unstable</Badge> the answer changed when the options were reordered.
              </>
            )
          : 'Option order not checked.'}
      </p>
      <AnswersTable texts={run.texts} results={run.results} options={run.options} keep={keep} badges={v.badgeCells} />
    </Card>
  );
}

export function ScoreResults(props: { scoring: Scoring }) {
  const { run } = props.scoring;
  return (
    <section class="results-area" data-testid="score-results">
      {run.status === 'idle' && <Empty title="Nothing scored yet">Add texts and a rubric, then press Score. The answers appear here.</Empty>}
      {run.status === 'running' && <Progress run={run} onStop={props.scoring.stop} />}
      {run.status === 'error' && (
        <ErrorBox
          title="The texts could not be scored"
          error={run.error ?? run.message}
          onFix={(f) => void props.scoring.fix(f)}
          onRetry={props.scoring.stuck ? undefined : () => void props.scoring.score()}
        />
      )}
      {run.status === 'done' && <Answers run={run} scoring={props.scoring} />}
    </section>
  );
}
