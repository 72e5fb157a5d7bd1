// The Score page's state and its calls to the backend, one hook per concern: the texts, the
// rubric, and the scoring job (its settings, the run and the exports). `useScore` joins them.
import { useState } from 'preact/hooks';
import { answersCsv, cancelRun, errorMessage, example, exportText, loadRubric, pickFile, saveRubric, scoreTexts } from '../../api';
import { probabilityOf } from '../../components/PercentInput';
import { answersJson } from '../../lib/answers';
import { checkDraft, emptyDraft, fromRubric, type RubricDraft, toRubric } from '../../lib/rubric';
import { parsePasted, parseTextFile } from '../../lib/texts';
import type { DebiasMode, ScoreOptions, TextIn, TextResult } from '../../types';

export type Run =
  | { status: 'idle' }
  | { status: 'running'; count: number; done: number; debias: DebiasMode; stopping: boolean }
  | { status: 'done'; texts: TextIn[]; results: TextResult[]; debias: DebiasMode; options: ScoreOptions }
  | { status: 'error'; message: string };

/** The texts to score: pasted (one per line, or one in all) or read from a file. */
export function useTexts() {
  const [pasted, setPasted] = useState('');
  const [onePerLine, setOnePerLine] = useState(true);
  const [file, setFile] = useState<{ name: string; texts: TextIn[] } | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);

  async function openFile(e: Event) {
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

  /** Replace whatever is there with these texts, one per line. */
  function fill(texts: string[]) {
    setFile(null);
    setOnePerLine(true);
    setPasted(texts.join('\n'));
  }

  return {
    pasted,
    setPasted,
    onePerLine,
    setOnePerLine,
    file,
    removeFile: () => setFile(null),
    fileError,
    openFile,
    fill,
    texts: file ? file.texts : parsePasted(pasted, onePerLine),
  };
}
export type Texts = ReturnType<typeof useTexts>;

/** The rubric: opened, written in the form, or saved; with what is wrong with it. */
export function useRubric() {
  const [draft, setDraft] = useState<RubricDraft | null>(null);
  const [from, setFrom] = useState<string>('');
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);

  /** Does `task` with the rubric's error and note cleared; `busy(label)` says what it is waiting for. */
  async function act(task: (busy: (label: string) => void) => Promise<void>) {
    setError(null);
    setNote(null);
    try {
      await task(setBusy);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  }

  /** Show a rubric read from `source` (a path, or words for where it came from). */
  function show(d: RubricDraft, source: string) {
    setDraft(d);
    setFrom(source);
    setEditing(false);
  }

  const open = () =>
    act(async (busy) => {
      const path = await pickFile('rubric');
      if (!path) return;
      busy('Opening the rubric…');
      show(fromRubric(await loadRubric(path)), path);
    });

  async function save() {
    if (!draft) return;
    await act(async (busy) => {
      const name = (draft.name.trim() || 'rubric').replace(/[^\w.-]+/g, '-');
      const path = await pickFile('rubric_save', `${name}.rubric.json`);
      if (!path) return;
      busy('Saving the rubric…');
      await saveRubric(path, toRubric(draft));
      setFrom(path);
      setNote(`Saved to ${path}`);
    });
  }

  function startNew() {
    setDraft(emptyDraft());
    setFrom('');
    setEditing(true);
    setError(null);
    setNote(null);
  }

  return {
    draft,
    setDraft,
    from,
    editing,
    toggleEditing: () => setEditing(!editing),
    busy,
    error,
    note,
    problems: draft ? checkDraft(draft) : [],
    act,
    show,
    open,
    save,
    startNew,
  };
}
export type RubricState = ReturnType<typeof useRubric>;

/** The scoring job: its settings, the run (progress, stop, answers) and the exports of its answers. */
export function useScoring(texts: TextIn[], rubric: RubricState, onModelUsed: () => void) {
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

  const { draft, problems } = rubric;

  /** Score the texts; `choice` overrides the settings as they were before this render (a
   * calibration just chosen from the review, with its model and option order). */
  async function score(choice?: { calibration: string; debias: DebiasMode; model: string }) {
    if (!draft || texts.length === 0 || problems.length) return;
    const chosen = choice?.debias ?? debias;
    const snapshot = texts;
    const options: ScoreOptions = {
      abstainBelow: probabilityOf(abstainBelow),
      abstainLetterMass: probabilityOf(abstainMass),
      calibration: (choice ? choice.calibration : calibration) ?? undefined,
    };
    const modelPath = choice ? choice.model : model;
    setExportNote(null);
    setExportError(null);
    setRun({ status: 'running', count: snapshot.length, done: 0, debias: chosen, stopping: false });
    try {
      const results = await scoreTexts(
        { rubric: toRubric(draft), texts: snapshot, debias: chosen, model: modelPath || undefined, options },
        (p) => setRun((r) => (r.status === 'running' ? { ...r, done: p.done } : r)),
      );
      setRun({ status: 'done', texts: snapshot, results, debias: chosen, options });
    } catch (e) {
      setRun({ status: 'error', message: errorMessage(e) });
    } finally {
      onModelUsed();
    }
  }

  /** Stop after the text being scored; the texts scored so far come back. */
  function stop() {
    setRun((r) => (r.status === 'running' ? { ...r, stopping: true } : r));
    void cancelRun();
  }

  async function exportAs(kind: 'csv' | 'json') {
    if (run.status !== 'done') return;
    setExportNote(null);
    setExportError(null);
    const base = (draft?.name.trim() || 'answers').replace(/[^\w.-]+/g, '-');
    try {
      const path =
        kind === 'csv'
          ? await exportText('export_csv', `${base}-answers.csv`, await answersCsv(run.texts, run.results))
          : await exportText('export_json', `${base}-answers.json`, answersJson(run.results));
      if (path) setExportNote(`Exported to ${path}`);
    } catch (e) {
      setExportError(errorMessage(e));
    }
  }

  /** Why Score cannot be pressed yet, or null. */
  const why =
    texts.length === 0 ? 'Add a text to score.' : !draft ? 'Choose or write a rubric.' : problems.length ? 'Fix the rubric first (see above).' : null;

  return {
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
