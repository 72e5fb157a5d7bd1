// Score: texts + a rubric → the model's answer to every question for every text.
import { useState } from 'preact/hooks';
import { cancelRun, errorMessage, example, exportText, loadRubric, pickFile, saveRubric, scoreTexts } from '../api';
import { RubricEditor } from '../components/RubricEditor';
import { Badge, Busy, Card, Empty, ErrorBox, Notice } from '../components/ui';
import { answersCsv, answersJson } from '../lib/answers';
import { DEBIAS, debiasHelp } from '../lib/debias';
import { baseName, pct } from '../lib/format';
import { checkDraft, emptyDraft, fromRubric, type RubricDraft, toRubric } from '../lib/rubric';
import { parsePasted, parseTextFile } from '../lib/texts';
import type { CriterionResult, DebiasMode, ModelEntry, ScoreOptions, TextIn, TextResult } from '../types';

type Run =
  | { status: 'idle' }
  | { status: 'running'; count: number; done: number; debias: DebiasMode; stopping: boolean }
  | { status: 'done'; texts: TextIn[]; results: TextResult[]; debias: DebiasMode; options: ScoreOptions }
  | { status: 'error'; message: string };

const TYPE_WORDS = { choice: 'choice', noul: 'yes / no', score: 'score' } as const;

/** A percentage typed into a field, as the probability the library takes; empty or not a number: none. */
export function probabilityOf(typed: string): number | undefined {
  if (!typed.trim()) return undefined;
  const v = Number(typed);
  return Number.isFinite(v) ? Math.min(100, Math.max(0, v)) / 100 : undefined;
}

/** Why a criterion got no answer, in words, with the threshold it fell under. */
function abstainWhy(c: CriterionResult, options: ScoreOptions): string {
  if (c.abstained === 'letter_mass') {
    return `No answer: the answer letters got ${pct(c.letter_mass, 0)} of the model's next-token probability, under the ${pct(options.abstainLetterMass, 0)} asked for. None of the options seems to fit.`;
  }
  return `No answer: the likeliest option has ${pct(c.probability, 0)}, under the ${pct(options.abstainBelow, 0)} asked for. The model is unsure.`;
}

function Cell(props: { c: CriterionResult; options: ScoreOptions }) {
  const c = props.c;
  const chosen = c.options.find((o) => o.id === c.chosen);
  // Abstained: the option with the top probability, shown as the one the model leaned to.
  const top = c.options.reduce((a, b) => (b.probability > a.probability ? b : a), c.options[0]);
  const why = c.abstained ? abstainWhy(c, props.options) : '';
  return (
    <details class="answer" data-testid="answer-cell" data-abstained={c.abstained}>
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
          {c.close && (
            <Badge kind="close" title="The top two answers are less than 10 points apart: the model is unsure.">
              close
            </Badge>
          )}
          {c.order_unstable === true && (
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
      {c.abstained && (
        <p class="small" data-testid="abstain-why">
          {why}
        </p>
      )}
      <p class="muted small">
        {c.expected_level !== undefined && <>Expected level {c.expected_level.toFixed(2)} · </>}
        Lead over the runner-up {pct(c.margin, 1)}
        {c.order_unstable === null ? ' · option order not checked' : c.order_unstable ? '' : ' · same answer in every option order'}
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

function ResultsTable(props: { texts: TextIn[]; results: TextResult[]; options: ScoreOptions }) {
  const names = props.results[0]?.criteria.map((c) => c.criterion) ?? [];
  const types = props.results[0]?.criteria.map((c) => c.type) ?? [];
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
          {props.results.map((r) => {
            const t = props.texts[r.index];
            return (
              <tr key={r.index}>
                <td class="text-col">
                  <span class="text-no">{r.id ?? t?.id ?? `#${r.index + 1}`}</span>
                  <span class="text-snippet" title={t?.text}>
                    {t?.text}
                  </span>
                </td>
                {r.criteria.map((c) => (
                  <td key={c.criterion}>
                    <Cell c={c} options={props.options} />
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

export function ScorePage(props: { models: ModelEntry[]; defaultModel?: string; onModelUsed: () => void }) {
  const [pasted, setPasted] = useState('');
  const [onePerLine, setOnePerLine] = useState(true);
  const [file, setFile] = useState<{ name: string; texts: TextIn[] } | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);

  const [draft, setDraft] = useState<RubricDraft | null>(null);
  const [rubricFrom, setRubricFrom] = useState<string>('');
  const [editing, setEditing] = useState(false);
  const [rubricBusy, setRubricBusy] = useState<string | null>(null);
  const [rubricError, setRubricError] = useState<string | null>(null);
  const [rubricNote, setRubricNote] = useState<string | null>(null);

  // One order by default, as `readout score` does.
  const [debias, setDebias] = useState<DebiasMode>('none');
  const [model, setModel] = useState<string>('');
  // When to give no answer (percentages as typed; empty: always answer), and a calibration file.
  const [abstainBelow, setAbstainBelow] = useState('');
  const [abstainMass, setAbstainMass] = useState('');
  const [calibration, setCalibration] = useState<string | null>(null);
  const [calibrationError, setCalibrationError] = useState<string | null>(null);
  const [run, setRun] = useState<Run>({ status: 'idle' });
  const [exportNote, setExportNote] = useState<string | null>(null);
  const [exportError, setExportError] = useState<string | null>(null);

  const texts = file ? file.texts : parsePasted(pasted, onePerLine);
  const problems = draft ? checkDraft(draft) : [];

  async function openRubric() {
    setRubricError(null);
    setRubricNote(null);
    try {
      const path = await pickFile('rubric');
      if (!path) return;
      setRubricBusy('Opening the rubric…');
      const r = await loadRubric(path);
      setDraft(fromRubric(r));
      setRubricFrom(path);
      setEditing(false);
    } catch (e) {
      setRubricError(errorMessage(e));
    } finally {
      setRubricBusy(null);
    }
  }

  /** Fill in the bundled example: three support tickets and the support-ticket rubric. */
  async function tryExample() {
    setRubricError(null);
    setRubricNote(null);
    try {
      setRubricBusy('Opening the example…');
      const ex = await example();
      setFile(null);
      setOnePerLine(true);
      setPasted(ex.texts.join('\n'));
      setDraft(fromRubric(ex.rubric));
      setRubricFrom('the bundled example');
      setEditing(false);
    } catch (e) {
      setRubricError(errorMessage(e));
    } finally {
      setRubricBusy(null);
    }
  }

  async function saveTheRubric() {
    if (!draft) return;
    setRubricError(null);
    setRubricNote(null);
    try {
      const name = (draft.name.trim() || 'rubric').replace(/[^\w.-]+/g, '-');
      const path = await pickFile('rubric_save', `${name}.rubric.json`);
      if (!path) return;
      setRubricBusy('Saving the rubric…');
      await saveRubric(path, toRubric(draft));
      setRubricFrom(path);
      setRubricNote(`Saved to ${path}`);
    } catch (e) {
      setRubricError(errorMessage(e));
    } finally {
      setRubricBusy(null);
    }
  }

  async function onFile(e: Event) {
    const input = e.currentTarget as HTMLInputElement;
    const f = input.files?.[0];
    input.value = '';
    setFileError(null);
    if (!f) return;
    try {
      const parsed = parseTextFile(f.name, await f.text());
      if (parsed.length === 0) throw new Error(`${f.name}: the file has no texts`);
      setFile({ name: f.name, texts: parsed });
    } catch (err) {
      setFile(null);
      setFileError(errorMessage(err));
    }
  }

  async function chooseCalibration() {
    setCalibrationError(null);
    try {
      const path = await pickFile('calibration');
      if (path) setCalibration(path);
    } catch (e) {
      setCalibrationError(errorMessage(e));
    }
  }

  async function score() {
    if (!draft || texts.length === 0 || problems.length) return;
    const chosen = debias;
    const snapshot = texts;
    const options: ScoreOptions = {
      abstainBelow: probabilityOf(abstainBelow),
      abstainLetterMass: probabilityOf(abstainMass),
      calibration: calibration ?? undefined,
    };
    setExportNote(null);
    setExportError(null);
    setRun({ status: 'running', count: snapshot.length, done: 0, debias: chosen, stopping: false });
    try {
      const results = await scoreTexts(
        { rubric: toRubric(draft), texts: snapshot, debias: chosen, model: model || undefined, options },
        (p) => setRun((r) => (r.status === 'running' ? { ...r, done: p.done } : r)),
      );
      setRun({ status: 'done', texts: snapshot, results, debias: chosen, options });
    } catch (e) {
      setRun({ status: 'error', message: errorMessage(e) });
    } finally {
      props.onModelUsed();
    }
  }

  async function doExport(kind: 'csv' | 'json') {
    if (run.status !== 'done') return;
    setExportNote(null);
    setExportError(null);
    const base = (draft?.name.trim() || 'answers').replace(/[^\w.-]+/g, '-');
    try {
      const path =
        kind === 'csv'
          ? await exportText('export_csv', `${base}-answers.csv`, answersCsv(run.texts, run.results))
          : await exportText('export_json', `${base}-answers.json`, answersJson(run.results));
      if (path) setExportNote(`Exported to ${path}`);
    } catch (e) {
      setExportError(errorMessage(e));
    }
  }

  const running = run.status === 'running';
  const why =
    texts.length === 0 ? 'Add a text to score.' : !draft ? 'Choose or write a rubric.' : problems.length ? 'Fix the rubric first (see above).' : null;

  return (
    <div class="page" data-page="score">
      <header class="page-head">
        <h1>Score texts</h1>
        <p class="lead">Paste texts, choose the questions to ask (a rubric), and the model answers each question with a probability.</p>
      </header>

      <Card
        step={1}
        title="Texts"
        testid="texts-card"
        actions={
          <button type="button" class="secondary" onClick={tryExample} disabled={!!rubricBusy} data-testid="try-example">
            Try the example
          </button>
        }
      >
        {file ? (
          <div class="file-chip">
            <span>
              <strong>{file.name}</strong> · {file.texts.length} text{file.texts.length === 1 ? '' : 's'}
            </span>
            <button type="button" class="link" onClick={() => setFile(null)}>
              Remove file
            </button>
          </div>
        ) : (
          <>
            <label for="texts" class="sr-only">
              Texts to score
            </label>
            <textarea
              id="texts"
              rows={5}
              value={pasted}
              placeholder="Paste a text here, for example: I was charged twice this month, please refund one of them."
              onInput={(e) => setPasted(e.currentTarget.value)}
            />
            <div class="row wrap">
              <label class="check">
                <input type="checkbox" checked={onePerLine} onChange={(e) => setOnePerLine(e.currentTarget.checked)} />
                Each line is a separate text
              </label>
              <span class="muted">
                {texts.length} text{texts.length === 1 ? '' : 's'}
              </span>
              <span class="spacer" />
              <label class="button secondary file-button">
                Open a file (CSV or JSONL)…
                <input type="file" accept=".csv,.jsonl,.ndjson,.json,.txt" onChange={onFile} data-testid="texts-file" />
              </label>
            </div>
          </>
        )}
        {fileError && <ErrorBox title="That file could not be read" message={fileError} />}
      </Card>

      <Card
        step={2}
        title="Rubric"
        testid="rubric-card"
        actions={
          <>
            <button type="button" class="secondary" onClick={openRubric} disabled={!!rubricBusy}>
              Open a saved rubric…
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setDraft(emptyDraft());
                setRubricFrom('');
                setEditing(true);
                setRubricError(null);
                setRubricNote(null);
              }}
            >
              New rubric
            </button>
          </>
        }
      >
        {rubricBusy && <Busy label={rubricBusy} />}
        {rubricError && <ErrorBox title="The rubric could not be used" message={rubricError} />}
        {rubricNote && <Notice>{rubricNote}</Notice>}
        {!draft && !rubricBusy && (
          <Empty title="No rubric yet">Open a saved rubric, or press “New rubric” to write one: each question has a type and its answers.</Empty>
        )}
        {draft && !editing && (
          <div class="rubric-summary" data-testid="rubric-summary">
            <p>
              <strong>{draft.name || 'Untitled rubric'}</strong>
              {draft.description && <span class="muted"> — {draft.description}</span>}
              {rubricFrom && <span class="muted mono small"> · {rubricFrom}</span>}
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
        )}
        {draft && editing && <RubricEditor draft={draft} onChange={setDraft} />}
        {draft && problems.length > 0 && editing && (
          <ul class="problems" data-testid="rubric-problems">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        {draft && (
          <div class="row">
            <button type="button" class="secondary" onClick={() => setEditing(!editing)}>
              {editing ? 'Done editing' : 'Edit'}
            </button>
            <button type="button" class="secondary" onClick={saveTheRubric} disabled={problems.length > 0 || !!rubricBusy}>
              Save rubric…
            </button>
          </div>
        )}
      </Card>

      <Card step={3} title="Score" testid="score-card">
        <div class="form-grid wide score-grid">
          <label for="score-debias">Option order</label>
          <div class="row wrap">
            <select id="score-debias" value={debias} onChange={(e) => setDebias(e.currentTarget.value as DebiasMode)} data-testid="score-debias">
              {DEBIAS.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.label}
                </option>
              ))}
            </select>
            <span class="muted small help" data-testid="score-debias-help">
              {debiasHelp(debias)}
            </span>
          </div>

          <label for="abstain-below">No answer below</label>
          <div class="row" data-testid="abstain-options">
            <input
              id="abstain-below"
              type="number"
              min={0}
              max={100}
              step={1}
              class="percent"
              placeholder="off"
              value={abstainBelow}
              onInput={(e) => setAbstainBelow(e.currentTarget.value)}
              data-testid="abstain-below"
            />
            <span class="muted small help">% confidence: a criterion whose likeliest option has less gets “no answer” (unsure). Empty: always answer.</span>
          </div>

          <label for="abstain-mass">No answer when the letters get under</label>
          <div class="row">
            <input
              id="abstain-mass"
              type="number"
              min={0}
              max={100}
              step={1}
              class="percent"
              placeholder="off"
              value={abstainMass}
              onInput={(e) => setAbstainMass(e.currentTarget.value)}
              data-testid="abstain-mass"
            />
            <span class="muted small help">% of the model's next-token probability: it wanted to say something else, so none of the options fits.</span>
          </div>

          <span class="label">Temperature</span>
          <div class="row">
            {calibration ? (
              <span class="file-chip" data-testid="calibration-chip">
                <span class="mono small" title={calibration}>
                  {baseName(calibration)}
                </span>
                <button type="button" class="link" onClick={() => setCalibration(null)}>
                  Remove
                </button>
              </span>
            ) : (
              <button type="button" class="secondary" onClick={chooseCalibration} data-testid="choose-calibration">
                Choose a calibration file…
              </button>
            )}
            <span class="muted small help">
              optional: from <span class="mono">readout calibrate</span> on a run of this model and option order
            </span>
          </div>
          {calibrationError && (
            <div class="span-all">
              <ErrorBox title="The calibration file could not be chosen" message={calibrationError} />
            </div>
          )}

          <label for="score-model">Model</label>
          <div class="row">
            <select id="score-model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
              <option value="">Default model{props.defaultModel ? ` (${props.models.find((m) => m.path === props.defaultModel)?.name ?? props.defaultModel})` : ''}</option>
              {props.models.map((m) => (
                <option key={m.path} value={m.path}>
                  {m.name}
                </option>
              ))}
            </select>
            <span class="spacer" />
            <button type="button" class="primary" onClick={score} disabled={running || !!why} data-testid="score-button">
              {running ? 'Scoring…' : 'Score'}
            </button>
          </div>
        </div>
        {why && !running && <p class="muted small right">{why}</p>}
      </Card>

      <section class="results-area" data-testid="score-results">
        {run.status === 'idle' && (
          <Empty title="Nothing scored yet">Add texts and a rubric, then press Score. The answers appear here.</Empty>
        )}
        {run.status === 'running' && (
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
              <button
                type="button"
                class="secondary"
                data-testid="stop-score"
                disabled={run.stopping}
                onClick={() => {
                  setRun((r) => (r.status === 'running' ? { ...r, stopping: true } : r));
                  void cancelRun();
                }}
              >
                Stop
              </button>
            </div>
          </div>
        )}
        {run.status === 'error' && <ErrorBox title="The texts could not be scored" message={run.message} onRetry={score} />}
        {run.status === 'done' && (
          <Card
            title="Answers"
            actions={
              <>
                <button type="button" class="secondary" onClick={() => doExport('csv')} data-testid="export-csv">
                  Export CSV
                </button>
                <button type="button" class="secondary" onClick={() => doExport('json')} data-testid="export-json">
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
            {exportNote && <Notice>{exportNote}</Notice>}
            {exportError && <ErrorBox title="The export failed" message={exportError} />}
            <p class="muted small">
              Click an answer to see every option. <Badge kind="close">close</Badge> the top two are within 10 points.{' '}
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
            <ResultsTable texts={run.texts} results={run.results} options={run.options} />
          </Card>
        )}
      </section>
    </div>
  );
}
