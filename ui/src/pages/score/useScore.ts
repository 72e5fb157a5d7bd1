// The Score page's state and its calls to the backend, one hook per concern: the texts, the
// rubric, and the scoring job (its settings, the run and the exports). `useScore` joins them.
import { useEffect, useRef, useState } from 'preact/hooks';
import { answersCsv, answersSheet, answersSummary, cancelRun, errorMessage, example, exportText, judgeRecord, scoreTexts, sessionLoad, sessionSave, setChatTemplate, summaryCsv, toAppError, type AppError, type Fix } from '../../api';
import { probabilityOf } from '../../components/PercentInput';
import { answersJson } from '../../lib/answers';
import { fromRubric, toRubric } from '../../lib/rubric';
import type { RubricState } from './useRubric';
import { useSettings } from './useSettings';
import { useRubric } from './useRubric';
import { useTexts } from './useTexts';
import type { DebiasMode, JudgeRecord, QuestionSummary, ScoreOptions, TextIn, TextResult } from '../../types';

export type Run =
  | { status: 'idle' }
  | { status: 'running'; count: number; done: number; debias: DebiasMode; stopping: boolean }
  | {
      status: 'done';
      texts: TextIn[];
      results: TextResult[];
      debias: DebiasMode;
      options: ScoreOptions;
      /** The library's summary per question of `results`. */
      summary: QuestionSummary[];
      /** The judge's last measured run (null: never measured), for the verdict. */
      judge: JudgeRecord | null;
    }
  /** `error`: what the shell said (its fix, its Details); `key`: the inputs it failed on. */
  | { status: 'error'; message: string; error?: AppError; key?: string };

// The texts and the rubric: ./useTexts.ts and ./useRubric.ts; the settings: ./useSettings.ts.
export { type Texts, useTexts } from './useTexts';
export { type RubricState, useRubric } from './useRubric';

/** The scoring job: its settings, the run (progress, stop, answers) and the exports of its answers. */
export function useScoring(texts: TextIn[], rubric: RubricState, onModelUsed: () => void) {
  // The option order (every rotation unless these texts would take too long), the model and when
  // to give no answer: ./useSettings.ts. And a calibration file.
  const settings = useSettings(texts, rubric.draft);
  const { debias, setDebias, model, setModel, abstainBelow, setAbstainBelow, abstainMass, setAbstainMass } = settings;
  const [calibration, setCalibration] = useState<string | null>(null);
  const [calibrationError, setCalibrationError] = useState<string | null>(null);
  /** Cut a text too long for the model from the middle (its head and tail kept). */
  const [truncate, setTruncate] = useState(false);
  const [run, setRun] = useState<Run>({ status: 'idle' });
  const [exportNote, setExportNote] = useState<string | null>(null);
  const [exportError, setExportError] = useState<string | null>(null);

  const { draft, problems } = rubric;

  /** Score the texts; `choice` overrides the settings as they were before this render (a
   * calibration just chosen from the review, with its model and option order). */
  async function score(choice?: { calibration: string; debias: DebiasMode; model: string }, cut = truncate) {
    if (!draft || texts.length === 0 || problems.length) return;
    const chosen = choice?.debias ?? debias;
    const snapshot = texts;
    const options: ScoreOptions = {
      abstainBelow: probabilityOf(abstainBelow),
      abstainLetterMass: probabilityOf(abstainMass),
      calibration: (choice ? choice.calibration : calibration) ?? undefined,
      truncateMiddle: cut || undefined,
    };
    const key = keyOf(cut);
    const modelPath = choice ? choice.model : model;
    // A jury: the first judge is the model chosen, the others are added under it.
    const jury = !choice && settings.judges.length > 0;
    if (jury) {
      options.judges = [modelPath, ...settings.judges];
      options.abstainOnDisagreement = settings.abstainDisagree || undefined;
    }
    setExportNote(null);
    setExportError(null);
    setRun({ status: 'running', count: snapshot.length, done: 0, debias: chosen, stopping: false });
    try {
      const results = await scoreTexts(
        { rubric: toRubric(draft), texts: snapshot, debias: chosen, model: modelPath || undefined, options },
        (p) => setRun((r) => (r.status === 'running' ? { ...r, done: p.done } : r)),
      );
      // The verdict's record is a nicety: a results folder that cannot be read gives none.
      const [summary, judge] = await Promise.all([answersSummary(results), jury ? null : judgeRecord(modelPath || undefined).catch(() => null)]);
      setRun({ status: 'done', texts: snapshot, results, debias: chosen, options, summary, judge });
    } catch (e) {
      const error = toAppError(e);
      setRun({ status: 'error', message: error.message, error, key });
    } finally {
      onModelUsed();
    }
  }

  /** Apply the fix the shell offered with its error, and score again. */
  async function fix(f: Fix) {
    if (f.kind === 'truncate_middle') {
      setTruncate(true);
      await score(undefined, true);
    } else if (f.kind === 'use_template') {
      try {
        await setChatTemplate(f.model, f.name);
      } catch (e) {
        const error = toAppError(e);
        setRun({ status: 'error', message: error.message, error, key: inputsKey });
        return;
      }
      await score();
    } else if (f.kind === 'retry') {
      await score();
    }
  }

  /** Stop after the text being scored; the texts scored so far come back. */
  function stop() {
    setRun((r) => (r.status === 'running' ? { ...r, stopping: true } : r));
    void cancelRun();
  }

  /** Export the answers: `sheet` one row per text for a spreadsheet, `csv` one row per text and
   * question (the CLI's table), `summary` the counts per question, `json` all of it with the
   * verdict (`verdictText`, the sentences shown above the answers). */
  async function exportAs(kind: 'csv' | 'json' | 'sheet' | 'summary', verdictText = '') {
    if (run.status !== 'done') return;
    setExportNote(null);
    setExportError(null);
    const base = (draft?.name.trim() || 'answers').replace(/[^\w.-]+/g, '-');
    try {
      const path =
        kind === 'csv'
          ? await exportText('export_csv', `${base}-answers-long.csv`, await answersCsv(run.texts, run.results))
          : kind === 'sheet'
            ? await exportText('export_csv', `${base}-answers.csv`, await answersSheet(run.texts, run.results))
            : kind === 'summary'
              ? await exportText('export_csv', `${base}-summary.csv`, await summaryCsv(run.results))
              : await exportText('export_json', `${base}-answers.json`, answersJson(run.results, run.summary, verdictText));
      if (path) setExportNote(`Exported to ${path}`);
      if (path) settings.addExport(path);
    } catch (e) {
      setExportError(errorMessage(e));
    }
  }

  // What a scoring depends on: an error that scoring again cannot help stands until one changes.
  const keyOf = (cut: boolean) => JSON.stringify([texts, draft, debias, model, settings.judges, settings.abstainDisagree, abstainBelow, abstainMass, calibration, cut]);
  const inputsKey = keyOf(truncate);
  const stuck = run.status === 'error' && run.key === inputsKey && run.error?.fix?.kind !== 'retry';

  /** Why Score cannot be pressed yet, or null. */
  const why =
    texts.length === 0
      ? 'Add a text to score.'
      : !draft
        ? 'Choose or write a rubric.'
        : problems.length
          ? 'Fix the rubric first (see above).'
          : stuck
            ? 'Scoring the same again would fail the same way: use the button under the error, or change something first.'
            : null;

  return {
    settings,
    debias,
    setDebias,
    model,
    setModel,
    abstainBelow,
    setAbstainBelow,
    abstainMass,
    setAbstainMass,
    calibration,
    setCalibration,
    calibrationError,
    setCalibrationError,
    truncate,
    setTruncate,
    fix,
    stuck,
    run,
    running: run.status === 'running',
    why,
    score,
    stop,
    exportAs,
    exportNote,
    exportError,
  };
}
export type Scoring = ReturnType<typeof useScoring>;

/** The whole page: texts, rubric and scoring, and the bundled example that fills the first two. */
export function useScore(onModelUsed: () => void) {
  const texts = useTexts();
  const rubric = useRubric();
  const scoring = useScoring(texts.texts, rubric, onModelUsed);
  const settings = scoring.settings;

  // The speed of each scoring, timed from its start to its answers, for the cost estimates.
  const started = useRef<{ at: number; model: string } | null>(null);
  useEffect(() => {
    const run = scoring.run;
    if (run.status === 'running' && !started.current) started.current = { at: performance.now(), model: scoring.model };
    if (run.status !== 'running' && started.current) {
      if (run.status === 'done') settings.measure(run, (performance.now() - started.current.at) / 1000, started.current.model);
      started.current = null;
    }
  }, [scoring.run.status]);

  // The page as it was left: put back once at the start (unless the person has begun already),
  // then kept as it changes (a moment after the last change).
  const [loaded, setLoaded] = useState(false);
  const live = useRef({ touched: false });
  live.current.touched = texts.pasted !== '' || !!texts.file || !!texts.picking || !!rubric.draft;
  useEffect(() => {
    sessionLoad()
      .then(async (s) => {
        if (!s || live.current.touched) return;
        rubric.restore(s.rubric, s.rubricFrom ?? '');
        settings.restoreDebias((s.debias as DebiasMode | null | undefined) ?? null);
        settings.setModel(s.model ?? '');
        settings.setAbstainBelow(s.abstainBelow ?? '');
        settings.setAbstainMass(s.abstainMass ?? '');
        if (s.speed) settings.setSpeed(s.speed);
        await texts.restore(s);
      })
      .catch(() => undefined)
      .finally(() => setLoaded(true));
  }, []);
  const draftJson = rubric.draft ? JSON.stringify(toRubric(rubric.draft)) : '';
  const textsFile = texts.sessionFile();
  const fileKey = textsFile ? [textsFile.name, textsFile.path, textsFile.column, textsFile.idColumn, textsFile.texts?.length].join('|') : '';
  useEffect(() => {
    if (!loaded) return;
    const t = setTimeout(() => {
      sessionSave({
        pasted: texts.pasted,
        onePerLine: texts.onePerLine,
        textsFile,
        rubric: draftJson ? JSON.parse(draftJson) : undefined,
        rubricFrom: rubric.from,
        debias: settings.chosenDebias ?? undefined,
        abstainBelow: settings.abstainBelow,
        abstainMass: settings.abstainMass,
        model: settings.model,
        speed: settings.speed ?? undefined,
      }).catch(() => undefined);
    }, 400);
    return () => clearTimeout(t);
  }, [loaded, texts.pasted, texts.onePerLine, fileKey, draftJson, rubric.from, settings.chosenDebias, settings.abstainBelow, settings.abstainMass, settings.model, settings.speed]);

  /** Fill in the bundled example: three support tickets and the support-ticket rubric. */
  const tryExample = () =>
    rubric.act(async (busy) => {
      busy('Opening the example…');
      const ex = await example();
      texts.fill(ex.texts);
      rubric.show(fromRubric(ex.rubric), 'the bundled example');
    });

  return { texts, rubric, scoring, tryExample };
}
