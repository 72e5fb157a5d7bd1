// "Fit the judge to my labels": the judge the Score page scores with (its model and option order)
// reads the person's labelled texts, and one number — a temperature — is fitted so that its
// stated confidence matches how often it is right, checked on labels held out of the fit. The
// shell runs it (`review_fit`: the library's run job on the labels file, then its calibrate fit)
// and says beforehand how far the labels are from what a fit needs (`review_fit_state`).
// "Use it when scoring" hands the calibration file to the Score page, which scores the texts again.
import { useEffect, useState } from 'preact/hooks';
import { cancelRun, errorMessage, reviewFit, reviewFitState } from '../../api';
import { debiasWords } from '../../components/ResultView';
import { Badge, Busy, ErrorBox } from '../../components/ui';
import { baseName } from '../../lib/format';
import type { DebiasMode, Fitted, FitState, ModelEntry, Readiness } from '../../types';
import type { ReviewState } from './useReview';

/** The Score page's judge, and what "Use it when scoring" does with a fit. */
export interface Judge {
  /** The model file ('' for the default model) and option order the Score page scores with. */
  model: string;
  debias: DebiasMode;
  models: ModelEntry[];
  defaultModel?: string;
  /** Score with this fit's calibration (its model and option order too). */
  use: (f: Fitted) => void;
}

type Run = { status: 'idle' } | { status: 'running'; done: number; total: number; stopping: boolean } | { status: 'error'; message: string };

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A share of confidence as points: 0.213 → "21.3 points". */
const points = (x: number) => `${(x * 100).toFixed(1)} point${Math.abs(x * 100 - 1) < 0.05 ? '' : 's'}`;

/** What the temperature does to the judge's probabilities, in words. */
function temperatureWords(t: number): string {
  if (t > 1.05) return 'the judge was too sure of itself, so its probabilities are softened';
  if (t < 0.95) return 'the judge was too timid, so its probabilities are sharpened';
  return 'the judge’s probabilities were about right, so they barely change';
}

function NotReady(props: { r: Readiness; criteria: number }) {
  const { r } = props;
  const texts = Math.ceil(r.more_answers / Math.max(1, props.criteria));
  return (
    <div class="fit-need" data-testid="fit-need">
      <p>
        A fit needs at least <strong>{r.min_rows}</strong> of your answers (an answer is one question of one text), with at least {r.min_errors} where the judge was wrong
        and {r.min_errors} where it was right, so that it can be checked on answers it did not see. So far you have given <strong>{r.answers}</strong>: the judge was wrong on{' '}
        {r.wrong} and right on {r.right}.
      </p>
      <p class="muted small">
        {props.criteria > 1 && `That is about ${plural(texts, 'more text')} with all ${props.criteria} questions answered. `}
        {(r.more_wrong > 0 || r.more_right > 0) &&
          r.answers > 0 &&
          `Among the answers to come, at least ${[r.more_wrong > 0 && `${r.more_wrong} where the judge is wrong`, r.more_right > 0 && `${r.more_right} where it is right`].filter(Boolean).join(' and ')} (its least sure texts come first: there it errs most). `}
        {r.more_texts > 0 && `The check holds out whole texts in ${r.folds} parts, so it needs ${plural(r.more_texts, 'more text')}. `}
      </p>
    </div>
  );
}

function Result(props: { f: Fitted; readiness: Readiness; judge: Judge; fresh: boolean; onRefit: () => void; refitDisabled: boolean }) {
  const { f, judge } = props;
  const c = f.calibration;
  const { before, after } = c.held_out;
  const helps = after.ece < before.ece;
  const on = c.fitted_on;
  const modelName = judge.models.find((m) => baseName(m.path) === f.model_file)?.name ?? f.model_file;
  const since = props.readiness.answers !== on.rows;
  const sameJudge = on.debias === judge.debias && (judge.model ? baseName(judge.model) : baseName(judge.defaultModel ?? '')) === f.model_file;
  return (
    <div class="fit-result" data-testid="fit-result">
      <p class="fit-headline" data-testid="fit-temperature">
        <strong>Temperature {c.temperature.toFixed(2)}</strong> — {temperatureWords(c.temperature)}. {props.fresh ? 'Fitted just now' : 'Fitted earlier'} on {on.rows} of your answers (the judge wrong on{' '}
        {on.wrong}).
      </p>
      <p class="fit-ece" data-testid="fit-ece">
        On answers held out of the fit, the judge’s stated confidence is off by <strong>{points(before.ece)}</strong> on average before, <strong>{points(after.ece)}</strong> after.{' '}
        {helps ? (
          <Badge kind="ok">better</Badge>
        ) : (
          <span class="bad">It does not help on answers it did not see: better score without it.</span>
        )}
      </p>
      {f.at_range_edge && (
        <p class="notice notice-warn" data-testid="fit-edge">
          The temperature reached the end of the range tried: the judge’s probabilities say little about which of its answers are right.
        </p>
      )}
      {since && (
        <p class="muted small" data-testid="fit-stale">
          You have {props.readiness.answers} answers now: fit again to use them all.
        </p>
      )}
      <p class="muted small">
        The judge: {modelName}, {debiasWords(on.debias)}. Kept beside your labels: <span class="mono" title={f.file}>{baseName(f.file)}</span> (and the judge’s run on them,{' '}
        <span class="mono" title={f.result_file}>{baseName(f.result_file)}</span>).
        {!sameJudge && ' Using it switches the Score page to that model and option order: a temperature belongs to one judge.'}
      </p>
      <details class="details">
        <summary>The check in figures</summary>
        <table class="table compact" data-testid="fit-check">
          <thead>
            <tr>
              <th>held out ({c.held_out.folds} parts, seed {c.held_out.seed})</th>
              <th class="num">before</th>
              <th class="num">after</th>
            </tr>
          </thead>
          <tbody>
            <tr title="Expected calibration error: the gap between stated confidence and the share right, over 10 bins (lower is better).">
              <td>ECE</td>
              <td class="num">{before.ece.toFixed(3)}</td>
              <td class="num">{after.ece.toFixed(3)}</td>
            </tr>
            <tr title="Negative log-probability of your answer (lower is better).">
              <td>NLL</td>
              <td class="num">{before.nll.toFixed(3)}</td>
              <td class="num">{after.nll.toFixed(3)}</td>
            </tr>
            <tr title="Squared error of the probabilities (lower is better).">
              <td>Brier</td>
              <td class="num">{before.brier.toFixed(3)}</td>
              <td class="num">{after.brier.toFixed(3)}</td>
            </tr>
          </tbody>
        </table>
        <p class="muted small">Temperature fitted on each part’s complement: {c.held_out.fold_temperatures.map((t) => t.toFixed(2)).join(', ')}.</p>
      </details>
      <div class="row wrap">
        <button type="button" class={helps ? 'primary' : 'secondary'} onClick={() => judge.use(f)} data-testid="fit-use">
          Use it when scoring
        </button>
        <button type="button" class="secondary" onClick={props.onRefit} disabled={props.refitDisabled} data-testid="fit-again">
          Fit again
        </button>
        <span class="muted small">Scores the texts on the Score page again, with this temperature.</span>
      </div>
    </div>
  );
}

export function FitJudge(props: { review: ReviewState; judge: Judge }) {
  const r = props.review;
  const { judge } = props;
  const [state, setState] = useState<{ status: 'loading' } | { status: 'ready'; s: FitState } | { status: 'error'; message: string }>({ status: 'loading' });
  const [run, setRun] = useState<Run>({ status: 'idle' });
  const [fresh, setFresh] = useState<Fitted | null>(null);
  const criteria = r.view?.criteria.length ?? 1;

  async function load() {
    try {
      const s = await reviewFitState();
      setState({ status: 'ready', s });
    } catch (e) {
      setState({ status: 'error', message: errorMessage(e) });
    }
  }
  // Read again whenever the report is: the labels may have changed.
  useEffect(() => {
    if (r.report.status === 'done') void load();
  }, [r.report]);

  async function fit() {
    setRun({ status: 'running', done: 0, total: 0, stopping: false });
    try {
      const f = await reviewFit({ model: judge.model || undefined, debias: judge.debias }, (p) =>
        setRun((x) => (x.status === 'running' ? { ...x, done: p.done, total: p.total } : x)),
      );
      setFresh(f);
      setRun({ status: 'idle' });
      void load();
    } catch (e) {
      setRun({ status: 'error', message: errorMessage(e) });
    }
  }

  function stop() {
    setRun((x) => (x.status === 'running' ? { ...x, stopping: true } : x));
    void cancelRun();
  }

  const s = state.status === 'ready' ? state.s : null;
  const ready = s?.readiness.ready ?? false;
  const shown = fresh ?? s?.fitted ?? null;
  const running = run.status === 'running';
  const modelName = judge.model ? (judge.models.find((m) => m.path === judge.model)?.name ?? baseName(judge.model)) : 'the default model';
  return (
    <section class="fit-judge" data-testid="fit-judge" data-ready={ready ? 'yes' : 'no'}>
      <h3 class="sub">Fit the judge to my labels</h3>
      <p class="muted">
        A judge’s probabilities can be too sure or too timid. One number, fitted on your labels, fixes much of that without changing any answer: the texts scored with it say
        “80%” where the judge is right about 8 times in 10.
      </p>
      {state.status === 'loading' && <Busy label="Counting your answers…" />}
      {state.status === 'error' && <ErrorBox title="Your labels could not be counted" message={state.message} onRetry={() => void load()} />}
      {s && !shown && !ready && <NotReady r={s.readiness} criteria={criteria} />}
      {shown && s && <Result f={shown} readiness={s.readiness} judge={judge} fresh={shown === fresh} onRefit={() => void fit()} refitDisabled={!ready || running} />}
      {s && !shown && (
        <div class="row wrap">
          <button type="button" class="primary" disabled={!ready || running} onClick={() => void fit()} data-testid="fit-button">
            {ready ? 'Fit the judge to my labels' : `Label ${plural(s.readiness.more_answers, 'more answer')} to fit the judge`}
          </button>
          <span class="muted small" data-testid="fit-judge-words">
            {ready
              ? `Runs ${modelName} with ${debiasWords(judge.debias)} (the Score page’s choices) on your ${s.readiness.answers} answers, then fits and checks the temperature.`
              : `It will run ${modelName} with ${debiasWords(judge.debias)}, the Score page’s choices.`}
          </span>
        </div>
      )}
      {run.status === 'running' && (
        <div class="row" data-testid="fit-running">
          <Busy label={run.stopping ? 'Stopping…' : run.total ? `The judge is reading your answers: ${run.done} of ${run.total}…` : 'Loading the judge…'} />
          <button type="button" class="secondary" onClick={stop} disabled={run.stopping} data-testid="fit-stop">
            Stop
          </button>
        </div>
      )}
      {run.status === 'error' && <ErrorBox title="The judge could not be fitted to your labels" message={run.message} testid="fit-error" />}
    </section>
  );
}
