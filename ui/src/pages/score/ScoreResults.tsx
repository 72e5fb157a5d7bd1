// The Score page's results area: nothing yet, the progress of a job (with Stop), its error, or
// the answers with their exports.
import { Badge, Busy, Card, Empty, ErrorBox, Notice } from '../../components/ui';
import { baseName } from '../../lib/format';
import { AnswersTable } from './AnswersTable';
import type { Run, Scoring } from './useScore';

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
  return (
    <Card
      title="Answers"
      actions={
        <>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('csv')} data-testid="export-csv">
            Export CSV
          </button>
          <button type="button" class="secondary" onClick={() => scoring.exportAs('json')} data-testid="export-json">
            Export JSON
          </button>
        </>
      }
    >
      {run.results.length < run.texts.length && (
        <Notice kind="warn">
          Stopped: {run.results.length} of {run.texts.length} texts scored.
        </Notice>
      )}
      {scoring.exportNote && <Notice>{scoring.exportNote}</Notice>}
      {scoring.exportError && <ErrorBox title="The export failed" message={scoring.exportError} />}
      <p class="muted small">
        Click an answer to see every option. <Badge kind="close">close</Badge> the top two are within 10 points.{' '}
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
        {run.debias !== 'none' ? (
          <>
            <Badge kind="unstable">order-unstable</Badge> the answer changed when the options were reordered.
          </>
        ) : (
          'Option order not checked.'
        )}
      </p>
      <AnswersTable texts={run.texts} results={run.results} options={run.options} />
    </Card>
  );
}

export function ScoreResults(props: { scoring: Scoring }) {
  const { run } = props.scoring;
  return (
    <section class="results-area" data-testid="score-results">
      {run.status === 'idle' && <Empty title="Nothing scored yet">Add texts and a rubric, then press Score. The answers appear here.</Empty>}
      {run.status === 'running' && <Progress run={run} onStop={props.scoring.stop} />}
      {run.status === 'error' && <ErrorBox title="The texts could not be scored" message={run.message} onRetry={() => void props.scoring.score()} />}
      {run.status === 'done' && <Answers run={run} scoring={props.scoring} />}
    </section>
  );
}
