// Evaluate: run a labelled eval set through a model under one configuration.
import { useEffect, useState } from 'preact/hooks';
import { Fragment } from 'preact';
import { cancelRun, errorMessage, listEvalSets, pickFile, runEval, runJury, saveResult, toAppError, type AppError, type Fix } from '../api';
import { CalibrationPicker } from '../components/CalibrationPicker';
import { ModelSelect } from '../components/ModelSelect';
import { ResultView } from '../components/ResultView';
import { CalibrateFromRun } from './evaluate/CalibrateFromRun';
import { JuryView } from './evaluate/JuryView';
import { Card, Empty, ErrorBox, Notice } from '../components/ui';
import { DEBIAS, debiasHelp } from '../lib/debias';
import { baseName, duration } from '../lib/format';
import type { DebiasMode, EvalSetEntry, Fitted, JuryFile, Mode, ModelEntry, Progress, ResultFile } from '../types';

type Run =
  | { status: 'idle' }
  | { status: 'running'; progress: Progress | null; cancelling: boolean; judge?: { at: number; of: number } }
  | { status: 'done'; result: ResultFile }
  | { status: 'jury'; file: JuryFile }
  /** `error`: what the shell said (its fix, its Details); `key`: the choices it failed on. */
  | { status: 'error'; message: string; error?: AppError; key?: string };

export function ProgressBar(props: { progress: Progress | null }) {
  const p = props.progress;
  const share = p && p.total > 0 ? p.done / p.total : 0;
  const rate = p && p.elapsed_seconds > 0 ? p.done / p.elapsed_seconds : 0;
  const eta = p && rate > 0 ? (p.total - p.done) / rate : NaN;
  return (
    <div class="progress-wrap" data-testid="progress">
      <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={p?.total ?? 0} aria-valuenow={p?.done ?? 0} aria-label="Rows done">
        <div class="progress-fill" style={{ width: `${(share * 100).toFixed(1)}%` }} />
      </div>
      <div class="progress-text">
        {!p || p.done === 0 ? (
          <span>Loading the model and planning the prompts…</span>
        ) : (
          <>
            <strong data-testid="rows-done">
              {p.done} of {p.total} rows
            </strong>
            <span>{Math.round(share * 100)}%</span>
            <span>{rate.toFixed(1)} rows/s</span>
            <span>{p.done >= p.total ? 'finishing…' : `about ${duration(eta)} left`}</span>
          </>
        )}
      </div>
    </div>
  );
}

export function EvaluatePage(props: {
  models: ModelEntry[];
  defaultModel?: string;
  onSaved: () => void;
  onModelUsed: () => void;
  /** "Use it when scoring" on a calibration fitted from a run: the Score page takes it. */
  onUseCalibration?: (f: Fitted) => void;
}) {
  const [sets, setSets] = useState<{ status: 'loading' | 'ready' | 'error'; list: EvalSetEntry[]; error?: string }>({ status: 'loading', list: [] });
  const [extra, setExtra] = useState<string[]>([]);
  const [evalSet, setEvalSet] = useState('');
  const [model, setModel] = useState('');
  // A jury: the judges beside `model` ('' the default model).
  const [judges, setJudges] = useState<string[]>([]);
  const [mode, setMode] = useState<Mode>('readout');
  const [shots, setShots] = useState(3);
  const [debias, setDebias] = useState<DebiasMode>('cyclic');
  const [pruneHead, setPruneHead] = useState(false);
  const [skipBad, setSkipBad] = useState(false);
  const [prompt, setPrompt] = useState<'default' | 'terse'>('default');
  const [prefixTree, setPrefixTree] = useState(true);
  const [batchedSuffixes, setBatchedSuffixes] = useState(true);
  const [trim, setTrim] = useState(true);
  // Empty: the device decides (512 word pieces a pass on the CPU, 16,384 on a GPU).
  const [passTokens, setPassTokens] = useState<number | undefined>(undefined);
  const [calibration, setCalibration] = useState<string | null>(null);
  const [run, setRun] = useState<Run>({ status: 'idle' });
  const [saveNote, setSaveNote] = useState<string | null>(null);
  /** Where the run shown was saved (the calibration is written beside it); null until saved. */
  const [savedPath, setSavedPath] = useState<string | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);

  async function loadSets() {
    setSets({ status: 'loading', list: [] });
    try {
      const list = await listEvalSets();
      setSets({ status: 'ready', list });
      setEvalSet((cur) => cur || (list.find((s) => !s.error) ?? list[0])?.path || '');
    } catch (e) {
      setSets({ status: 'error', list: [], error: errorMessage(e) });
    }
  }
  useEffect(() => {
    void loadSets();
  }, []);

  async function openSet() {
    try {
      const path = await pickFile('evalset');
      if (!path) return;
      setExtra((x) => (x.includes(path) ? x : [...x, path]));
      setEvalSet(path);
    } catch (e) {
      setRun({ status: 'error', message: errorMessage(e) });
    }
  }

  /** Run the chosen options; `resume`: complete the partial file a stopped run of them left. */
  async function start(resume = false, fixed: { skipBad?: boolean; truncateMiddle?: boolean } = {}) {
    if (!evalSet) return;
    const key = choicesKey(fixed.skipBad ?? skipBad);
    setSaveNote(null);
    setSavedPath(null);
    setSaveError(null);
    setRun({ status: 'running', progress: null, cancelling: false });
    if (judges.length > 0) {
      try {
        const file = await runJury(
          { evalSet, judges: [model, ...judges], mode, shots, debias, pruneHead, prompt, prefixTree, batchedSuffixes, trim, passTokens, truncateMiddle: fixed.truncateMiddle, skipBad: (fixed.skipBad ?? skipBad) || undefined },
          (p) => setRun((r) => (r.status === 'running' ? { ...r, progress: p.progress, judge: { at: p.judge + 1, of: p.judges } } : r)),
        );
        setRun({ status: 'jury', file });
        props.onSaved();
      } catch (e) {
        const error = toAppError(e);
        setRun({ status: 'error', message: error.message, error, key });
      } finally {
        props.onModelUsed();
      }
      return;
    }
    try {
      const result = await runEval(
        {
          evalSet,
          model: model || undefined,
          mode,
          shots,
          debias,
          pruneHead,
          prompt,
          prefixTree,
          batchedSuffixes,
          trim,
          passTokens,
          skipBad: (fixed.skipBad ?? skipBad) || undefined,
          truncateMiddle: fixed.truncateMiddle,
          resume: resume || undefined,
          calibration: calibration ?? undefined,
        },
        (progress) => setRun((r) => (r.status === 'running' ? { ...r, progress } : r)),
      );
      setRun({ status: 'done', result });
    } catch (e) {
      const error = toAppError(e);
      setRun({ status: 'error', message: error.message, error, key });
    } finally {
      props.onModelUsed();
    }
  }

  async function cancel() {
    setRun((r) => (r.status === 'running' ? { ...r, cancelling: true } : r));
    try {
      await cancelRun();
    } catch (e) {
      setRun({ status: 'error', message: errorMessage(e) });
    }
  }

  async function save(as: boolean) {
    if (run.status !== 'done') return;
    setSaveNote(null);
    setSaveError(null);
    try {
      let path: string | undefined;
      if (as) {
        // The shell proposes the CLI's name for the result (levers included).
        const picked = await pickFile('result_save');
        if (!picked) return;
        path = picked;
      }
      const written = await saveResult(path);
      setSaveNote(`Saved to ${written}`);
      setSavedPath(written);
      props.onSaved();
    } catch (e) {
      setSaveError(errorMessage(e));
    }
  }

  /** The run's saved file, saved to the results folder first when it is not yet (to calibrate it). */
  async function savedFile(): Promise<string> {
    if (savedPath) return savedPath;
    const written = await saveResult();
    setSaveNote(`Saved to ${written}`);
    setSavedPath(written);
    props.onSaved();
    return written;
  }

  /** Apply the fix the shell offered with the run's error, and run again. */
  function fix(f: Fix) {
    if (f.kind === 'skip_bad_lines') {
      setSkipBad(true);
      void start(false, { skipBad: true });
    } else if (f.kind === 'truncate_middle') {
      void start(false, { truncateMiddle: true });
    } else if (f.kind === 'retry') {
      void start();
    }
  }

  const running = run.status === 'running';
  const chosen = sets.list.find((s) => s.path === evalSet);
  const problem = chosen?.error;
  // What a run depends on: an error that running again cannot help stands until one changes, and
  // a set with a bad line is not run (the same error twice) until bad lines are skipped.
  const choicesKey = (skip: boolean) =>
    JSON.stringify([evalSet, model, mode, shots, debias, pruneHead, prompt, prefixTree, batchedSuffixes, trim, passTokens, skip, calibration]);
  const stuck = run.status === 'error' && run.key === choicesKey(skipBad) && run.error?.fix?.kind !== 'retry';
  const blocked = stuck || (!!problem && !skipBad);
  const options = [...sets.list.map((s) => ({ path: s.path, label: s.error ? `${s.name} — cannot be read` : `${s.name} (${s.rows} rows)` })), ...extra.filter((p) => !sets.list.some((s) => s.path === p)).map((p) => ({ path: p, label: baseName(p) }))];

  return (
    <div class="page" data-page="evaluate">
      <header class="page-head">
        <h1>Evaluate a model</h1>
        <p class="lead">Run a labelled eval set through a model, measure how often it is right and how steady its answers are, and save the result file.</p>
      </header>

      <Card title="Set-up" testid="eval-form">
        {sets.status === 'error' && <ErrorBox title="The eval sets could not be listed" message={sets.error ?? ''} onRetry={loadSets} />}
        <fieldset class="form-grid wide" disabled={running}>
          <label for="evalset">Eval set</label>
          <div class="row">
            <select id="evalset" value={evalSet} onChange={(e) => setEvalSet(e.currentTarget.value)}>
              {sets.status === 'loading' && <option value="">Loading…</option>}
              {options.length === 0 && sets.status !== 'loading' && <option value="">No eval set yet: open a file</option>}
              {options.map((o) => (
                <option key={o.path} value={o.path}>
                  {o.label}
                </option>
              ))}
            </select>
            <button type="button" class="secondary" onClick={openSet}>
              Open a file…
            </button>
          </div>
          {problem && (
            <div class="span-all">
              <ErrorBox
                testid="evalset-problem"
                title={`${baseName(chosen.path)} cannot be run as it is`}
                error={problem}
                onFix={skipBad ? undefined : (f) => f.kind === 'skip_bad_lines' && setSkipBad(true)}
                hint={
                  problem.line === null
                    ? 'Fix the file and read the eval sets again.'
                    : skipBad
                      ? 'Bad lines are skipped: Run scores the other lines, and the result file lists the ones left out.'
                      : 'Fix that line in the file and read the eval sets again, or skip bad lines to run the other lines.'
                }
                onRetry={loadSets}
                retryLabel="Read the eval sets again"
              />
            </div>
          )}

          <span class="label">Bad lines</span>
          <label class="check">
            <input type="checkbox" checked={skipBad} onChange={(e) => setSkipBad(e.currentTarget.checked)} data-testid="skip-bad" />
            Skip bad lines <span class="muted">(score the rest; the result file lists the lines left out)</span>
          </label>

          <label for="eval-model">{judges.length > 0 ? 'Judge 1' : 'Model'}</label>
          <ModelSelect id="eval-model" value={model} onChange={setModel} models={props.models} defaultModel={props.defaultModel} />
          {judges.map((j, i) => (
            <Fragment key={i}>
              <label for={`eval-judge-${i + 2}`}>Judge {i + 2}</label>
              <div class="row">
                <ModelSelect
                  id={`eval-judge-${i + 2}`}
                  value={j}
                  onChange={(p) => setJudges(judges.map((x, k) => (k === i ? p : x)))}
                  models={props.models}
                  defaultModel={props.defaultModel}
                />
                <button type="button" onClick={() => setJudges(judges.filter((_, k) => k !== i))} data-testid={`eval-remove-judge-${i + 2}`}>
                  Remove
                </button>
              </div>
            </Fragment>
          ))}
          <span class="label" />
          <p class="small row wrap">
            <button type="button" onClick={() => setJudges([...judges, ''])} data-testid="eval-add-judge">
              {judges.length === 0 ? 'Ask more models (a jury)' : 'Add a judge'}
            </button>
            <span class="muted" data-testid="eval-jury-help">
              {judges.length === 0
                ? 'Several models can judge together: each runs the eval set, and the jury is compared with the best of them.'
                : `${judges.length + 1} judges run the eval set one after another; each judge's result file and the jury file go to the results folder.`}
            </span>
          </p>

          <span class="label">How to read the answer</span>
          <div class="segmented" role="radiogroup" aria-label="Mode">
            <label class={mode === 'readout' ? 'on' : ''} title="Read the probabilities of the answer letters (one pass, never malformed).">
              <input type="radio" name="mode" value="readout" checked={mode === 'readout'} onChange={() => setMode('readout')} />
              Readout (letter probabilities)
            </label>
            <label class={mode === 'generate' ? 'on' : ''} title="Let the model write a short reply and take its first letter; a reply without one is invalid.">
              <input type="radio" name="mode" value="generate" checked={mode === 'generate'} onChange={() => setMode('generate')} />
              Generate (model writes a reply)
            </label>
          </div>

          <label for="shots">Worked examples (shots)</label>
          <div class="row">
            <input id="shots" type="number" min={0} max={8} value={shots} onInput={(e) => setShots(Math.max(0, Math.min(8, Number(e.currentTarget.value) || 0)))} class="narrow" />
            <span class="muted small">examples shown before each question (0 for none)</span>
          </div>

          <label for="debias">Option order</label>
          <div class="row">
            <select id="debias" value={debias} onChange={(e) => setDebias(e.currentTarget.value as DebiasMode)}>
              {DEBIAS.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.label}
                </option>
              ))}
            </select>
            <span class="muted small">{debiasHelp(debias)}</span>
          </div>

          <span class="label">Temperature</span>
          <CalibrationPicker
            value={calibration}
            onChange={setCalibration}
            onError={(message) => {
              if (message !== null) setRun({ status: 'error', message });
            }}
            testidPrefix="eval-"
            more="; recorded in the result file"
            wrap
          />

          <span class="label">Speed</span>
          <label class="check">
            <input type="checkbox" checked={pruneHead} onChange={(e) => setPruneHead(e.currentTarget.checked)} />
            Prune the output layer to the answer letters <span class="muted">(faster; same answers)</span>
          </label>

          <span class="label">Prompt</span>
          <div class="segmented" role="radiogroup" aria-label="Prompt">
            <label class={prompt === 'default' ? 'on' : ''} title="The standard layout: labelled question and options, and a closing instruction.">
              <input type="radio" name="prompt" value="default" checked={prompt === 'default'} onChange={() => setPrompt('default')} />
              Standard
            </label>
            <label class={prompt === 'terse' ? 'on' : ''} title="Fewer words between the text and the answer: faster per question; answers can differ.">
              <input type="radio" name="prompt" value="terse" checked={prompt === 'terse'} onChange={() => setPrompt('terse')} data-testid="prompt-terse" />
              Terse (faster; answers can differ)
            </label>
          </div>

          <span class="label">Advanced</span>
          <details class="levers" data-testid="levers">
            <summary>Speed settings <span class="muted small">(for measuring speed; leave them as they are)</span></summary>
            <label class="check">
              <input type="checkbox" checked={prefixTree} onChange={(e) => setPrefixTree(e.currentTarget.checked)} data-testid="lever-prefix-tree" />
              Share prompt beginnings <span class="muted">(each shared part computed once; off: every prompt from scratch)</span>
            </label>
            <label class="check">
              <input type="checkbox" checked={batchedSuffixes} onChange={(e) => setBatchedSuffixes(e.currentTarget.checked)} data-testid="lever-batch" />
              Batch the questions <span class="muted">(many questions in one pass; off: one at a time)</span>
            </label>
            <label class="check">
              <input type="checkbox" checked={trim} onChange={(e) => setTrim(e.currentTarget.checked)} data-testid="lever-trim" />
              Read the answer position only <span class="muted">(off: the output layer at every word piece)</span>
            </label>
            <div class="row">
              <input id="pass-tokens" type="number" min={1} max={65536} value={passTokens ?? ''} placeholder="512" class="narrow" onInput={(e) => setPassTokens(e.currentTarget.value === '' ? undefined : Math.max(1, Number(e.currentTarget.value) || 1))} data-testid="lever-pass-tokens" />
              <label for="pass-tokens" class="muted small">word pieces per pass (empty: 512 on the CPU, 16,384 on a GPU)</label>
            </div>
            <p class="muted small">Answers stay the same with any of these; only the time changes. The result file records each setting.</p>
          </details>
        </fieldset>
        <div class="row end">
          {running ? (
            <button type="button" class="danger-button" onClick={cancel} disabled={run.cancelling} data-testid="cancel-button">
              {run.cancelling ? 'Stopping…' : 'Cancel'}
            </button>
          ) : (
            <button
              type="button"
              class="primary"
              onClick={() => start()}
              disabled={!evalSet || blocked}
              title={blocked ? (stuck ? 'Running the same again would fail the same way: use the button under the error, or change a choice.' : 'This set has a bad line: skip bad lines to run the others.') : undefined}
              data-testid="run-button"
            >
              Run
            </button>
          )}
        </div>
      </Card>

      <section class="results-area" data-testid="eval-results">
        {run.status === 'idle' && <Empty title="No run yet">Choose an eval set and press Run. A run of authored144 on the default model takes a minute or two on a laptop.</Empty>}
        {run.status === 'running' && (
          <Card title={run.cancelling ? 'Stopping after the rows in flight…' : run.judge ? `Running judge ${run.judge.at} of ${run.judge.of}` : 'Running'} testid="running-card">
            <ProgressBar progress={run.progress} />
          </Card>
        )}
        {run.status === 'jury' && <JuryView file={run.file} />}
        {run.status === 'error' && (
          <ErrorBox title="The run could not be done" error={run.error ?? run.message} onFix={fix} onRetry={stuck ? undefined : () => start()} />
        )}
        {run.status === 'done' && (
          <>
            {run.result.eval_set.skipped.length > 0 && (
              <Notice kind="warn">
                <span data-testid="skipped-note">
                  {run.result.eval_set.skipped.length === 1 ? '1 bad line was' : `${run.result.eval_set.skipped.length} bad lines were`} left out (the result file lists them):{' '}
                  {run.result.eval_set.skipped
                    .slice(0, 3)
                    .map((b) => `line ${b.line}, field “${b.field}”: ${b.reason}`)
                    .join('; ')}
                  {run.result.eval_set.skipped.length > 3 ? '; …' : ''}
                </span>
              </Notice>
            )}
            {saveNote && <Notice>{saveNote}</Notice>}
            {saveError && <ErrorBox title="The result file could not be saved" message={saveError} />}
            <ResultView
              result={run.result}
              below={<CalibrateFromRun result={run.result} file={savedFile} onUse={(f) => props.onUseCalibration?.(f)} />}
              actions={
                <>
                  <button type="button" class="primary" onClick={() => save(false)} data-testid="save-result">
                    Save to results folder
                  </button>
                  <button type="button" class="secondary" onClick={() => save(true)}>
                    Save as…
                  </button>
                  {run.result.status === 'partial' && (
                    <button type="button" class="secondary" onClick={() => start(true)} data-testid="resume-run" title="Score the rows left, keeping those done">
                      Resume
                    </button>
                  )}
                </>
              }
            />
          </>
        )}
      </section>
    </div>
  );
}

