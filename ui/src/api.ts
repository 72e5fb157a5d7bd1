// The one door to the backend. Every call the UI makes to the Rust shell goes through this
// module. Inside Tauri it uses `invoke` / `Channel` from @tauri-apps/api; in a plain browser
// (no `window.__TAURI_INTERNALS__`) a dev or test build loads ./mock.ts instead, so the page runs
// for tests and development (a production build has no mock). The command names, argument
// names and JSON shapes are the IPC contract: see README.md.
import { Channel, invoke } from '@tauri-apps/api/core';
import type { AppError as ShellError } from './gen/AppError';
import type { DeriveRequest } from './gen/DeriveRequest';
import type { Fix } from './gen/Fix';
import type { RunRequest as ShellRunRequest } from './gen/RunRequest';
import type { Settings as ShellSettings } from './gen/Settings';
import type {
  CatalogueItem,
  Comparison,
  DebiasMode,
  Derivation,
  EvalSetEntry,
  EvalSetRecord,
  Example,
  FitState,
  Fitted,
  LabelsCurveEntry,
  LabelsCurveFile,
  RowTexts,
  ScoredEntry,
  ScoredFile,
  ModelEntry,
  PickKind,
  Progress,
  PullProgress,
  Recent,
  RecentKind,
  Report,
  ResultEntry,
  ResultFile,
  ReviewEntry,
  ReviewUpdate,
  ReviewView,
  Rubric,
  RubricEntry,
  RunRequest,
  ScoreOptions,
  ScoreProgress,
  Session,
  Settings,
  TextIn,
  TextResult,
  QuestionSummary,
  JudgeRecord,
  JuryFile,
  JuryProgress,
  PairwiseReport,
} from './types';

export type * from './types';

export interface ScoreRequest {
  rubric: Rubric;
  texts: TextIn[];
  /** How the options' order is handled (the library's debias modes, as in a run). */
  debias: DebiasMode;
  model?: string;
  /** When to give no answer, and a calibration file (path from pick_file); omitted = neither. */
  options?: ScoreOptions;
}

/** The backend, as the UI sees it. Both the Tauri and the mock implementation provide it. */
export interface Backend {
  /** Scores the texts, reporting after each; stopped by `cancelRun`, it gives the texts scored so far (fewer results than texts). */
  scoreTexts(req: ScoreRequest, onProgress: (p: ScoreProgress) => void): Promise<TextResult[]>;
  /** The bundled example rubric and texts. */
  example(): Promise<Example>;
  loadRubric(path: string): Promise<Rubric>;
  saveRubric(path: string, rubric: Rubric): Promise<void>;
  listEvalSets(): Promise<EvalSetEntry[]>;
  runEval(req: RunRequest, onProgress: (p: Progress) => void): Promise<ResultFile>;
  /** Runs a jury (`req.judges`, two or more models) on the eval set, each judge in turn; their result files and the jury file are kept in the results folder. */
  runJury(req: RunRequest, onProgress: (p: JuryProgress) => void): Promise<JuryFile>;
  /** The standings of a pairwise run (win rates, Bradley–Terry scores); null for a run of another set. */
  pairwiseStandings(file: string): Promise<PairwiseReport | null>;
  cancelRun(): Promise<void>;
  /** Writes the last run's result file; returns the path written. No path: the results folder, default name. */
  saveResult(path?: string): Promise<string>;
  listResults(dir?: string): Promise<ResultEntry[]>;
  loadResult(file: string): Promise<ResultFile>;
  compareResults(a: string, b: string): Promise<Comparison>;
  listModels(): Promise<ModelEntry[]>;
  addModel(path: string): Promise<ModelEntry>;
  /** Chooses the chat template a model is read with (a family's name or a Jinja file), or its own (null). */
  setChatTemplate(path: string, template: string | null): Promise<ModelEntry>;
  /** The chat-template families the library knows (llama.cpp's names). */
  chatTemplateNames(): Promise<string[]>;
  /** The library's catalogue of judges worth trying, on the hub. */
  catalogue(): Promise<CatalogueItem[]>;
  /** Downloads `ORG/REPO[@REVISION][:FILE]` from the hub into its cache, reporting bytes; stopped by `cancelPull` (what arrived is kept, the next pull resumes). The model joins the list. */
  pullModel(spec: string, onProgress: (p: PullProgress) => void): Promise<ModelEntry>;
  cancelPull(): Promise<void>;
  /** The library's DERIVED figures of a model (`readout derive`), from its shape alone. */
  deriveModel(req: DeriveRequest): Promise<Derivation>;
  getSettings(): Promise<Settings>;
  setSettings(s: Settings): Promise<Settings>;
  /** A native file dialog; null when the user cancels. */
  pickFile(kind: PickKind, defaultName?: string): Promise<string | null>;
  /** Ask where to save and write a text export (CSV, JSON). Returns the path, or null if cancelled. */
  exportText(kind: 'export_csv' | 'export_json', defaultName: string, contents: string): Promise<string | null>;
  /** Scored answers as the library's CSV table (the columns of `readout score --csv`). */
  answersCsv(texts: TextIn[], results: TextResult[]): Promise<string>;
  /** Scored answers for a spreadsheet: one row per text, numbered from 1, the answers in words. */
  answersSheet(texts: TextIn[], results: TextResult[]): Promise<string>;
  /** The library's summary per question: how many texts got each answer, how many are flagged. */
  answersSummary(results: TextResult[]): Promise<QuestionSummary[]>;
  /** That summary as a table for a spreadsheet (one row per question and answer). */
  summaryCsv(results: TextResult[]): Promise<string>;
  /** The newest complete run of `model` (the default when absent) in the results folder: how often it was right; null when never measured. */
  judgeRecord(model?: string): Promise<JudgeRecord | null>;
  /** Starts a review of texts just scored (a folder in the app's data folder) and opens it. */
  reviewStart(rubric: Rubric, texts: TextIn[], results: TextResult[]): Promise<ReviewView>;
  /** The review folders the app keeps, newest first. */
  reviewList(): Promise<ReviewEntry[]>;
  /** Opens a review folder `reviewList` gave, with its labels so far. */
  reviewOpen(dir: string): Promise<ReviewView>;
  /** Opens an answers file (`readout score --out`) with its texts and rubric, each chosen with `pickFile`. */
  reviewOpenAnswers(answers: string, texts: string, rubric: string): Promise<ReviewView>;
  /** Gives a text's answers (an option index per criterion, null where none) or skips it; written at once. */
  reviewLabel(index: number, answers: (number | null)[], skipped: boolean): Promise<ReviewUpdate>;
  /** Takes a text's labels back; written at once. */
  reviewUndo(index: number): Promise<ReviewUpdate>;
  /** Agreement and corrected shares; `targetHalfWidth` (0.05 = ± 5 %) for the labels needed. */
  reviewReport(targetHalfWidth: number): Promise<Report>;
  /** How far the open review's labels are from a fit of the judge's temperature, and the fit made on them earlier. */
  reviewFitState(): Promise<FitState>;
  /** Runs the judge (`model`, the default when absent, with `debias`) on the review's labels file, fits a temperature on that run and writes both beside the labels; stopped by `cancelRun`. */
  reviewFit(req: { model?: string; debias: DebiasMode }, onProgress: (p: Progress) => void): Promise<Fitted>;
  /** "Calibrate from this run": fits a temperature on a saved result file (`readout calibrate`'s fit) and writes NAME.calibration.json beside it. */
  calibrateResult(file: string): Promise<Fitted>;
  /** The labels-curve files (`readout bench labels`) in the results folder, or in `dir`. */
  listLabelsCurves(dir?: string): Promise<LabelsCurveEntry[]>;
  loadLabelsCurve(file: string): Promise<LabelsCurveFile>;
  /** My rubrics: the rubrics kept in the app's data folder, by name. */
  rubricLibraryList(): Promise<RubricEntry[]>;
  /** Keeps a rubric in My rubrics (one of the same name is replaced); checked first. */
  rubricLibrarySave(rubric: Rubric): Promise<RubricEntry>;
  rubricLibraryDelete(path: string): Promise<void>;
  /** The texts, rubric and export files opened lately, newest first. */
  recentList(): Promise<Recent>;
  /** Remembers a file chosen in a dialog (or one already listed); gives the lists back. */
  recentAdd(kind: RecentKind, path: string): Promise<Recent>;
  /** The contents of a texts file chosen in a dialog or listed in the recent files. */
  readTextsFile(path: string): Promise<string>;
  /** The Score page as it was left (null at a first start), and keeping it. */
  sessionLoad(): Promise<Session | null>;
  sessionSave(session: Session): Promise<void>;
  /** The scorings kept in the results folder (one per Score), or in `dir`, newest first. */
  listScored(dir?: string): Promise<ScoredEntry[]>;
  loadScored(file: string): Promise<ScoredFile>;
  /** The texts of a run's rows (from the eval set it read, when unchanged on this computer). */
  rowTexts(evalSet: EvalSetRecord): Promise<RowTexts>;
}

/** Settings as the shell sends them, with `threads` 0 (all cores) where it keeps none. */
const fromShell = (s: Settings): Settings => ({ ...s, threads: s.threads ?? 0 });

const strip = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

const tauriBackend: Backend = {
  scoreTexts: ({ rubric, texts, debias, model, options }, onProgress) =>
    invoke<TextResult[]>('score_texts', {
      ...strip({ rubric, texts: texts satisfies TextIn[], debias, model, options: options && (strip(options) satisfies ScoreOptions) }),
      onProgress: new Channel<ScoreProgress>(onProgress),
    }),
  example: () => invoke<Example>('example'),
  loadRubric: (path) => invoke<Rubric>('load_rubric', { path }),
  saveRubric: (path, rubric) => invoke<void>('save_rubric', { path, rubric }),
  listEvalSets: () => invoke<EvalSetEntry[]>('list_eval_sets'),
  runEval: (req, onProgress) => {
    const channel = new Channel<Progress>(onProgress);
    return invoke<ResultFile>('run_eval', { request: strip(req) satisfies ShellRunRequest, onProgress: channel });
  },
  runJury: (req, onProgress) => {
    const channel = new Channel<JuryProgress>(onProgress);
    return invoke<JuryFile>('run_jury', { request: strip(req) satisfies ShellRunRequest, onProgress: channel });
  },
  pairwiseStandings: (file) => invoke<PairwiseReport | null>('pairwise_standings', { file }),
  cancelRun: () => invoke<void>('cancel_run'),
  saveResult: (path) => invoke<string>('save_result', strip({ path })),
  listResults: (dir) => invoke<ResultEntry[]>('list_results', strip({ dir })),
  loadResult: (file) => invoke<ResultFile>('load_result', { file }),
  compareResults: (a, b) => invoke<Comparison>('compare_results', { a, b }),
  listModels: () => invoke<ModelEntry[]>('list_models'),
  addModel: (path) => invoke<ModelEntry>('add_model', { path }),
  setChatTemplate: (path, template) => invoke<ModelEntry>('set_chat_template', { path, template }),
  chatTemplateNames: () => invoke<string[]>('chat_template_names'),
  catalogue: () => invoke<CatalogueItem[]>('catalogue'),
  pullModel: (spec, onProgress) => invoke<ModelEntry>('pull_model', { spec, onProgress: new Channel<PullProgress>(onProgress) }),
  cancelPull: () => invoke<void>('cancel_pull'),
  deriveModel: (request) => invoke<Derivation>('derive_model', { request: strip(request) satisfies DeriveRequest }),
  // The shell keeps `threads` unset for all cores (null); the UI shows 0.
  getSettings: async () => fromShell(await invoke<Settings>('get_settings')),
  // One `settings` argument, as the command takes it; it answers with the settings saved.
  setSettings: async (s) =>
    fromShell(
      await invoke<Settings>('set_settings', {
        settings: { ...s, threads: s.threads > 0 ? s.threads : null } satisfies ShellSettings,
      }),
    ),
  pickFile: (kind, defaultName) => invoke<string | null>('pick_file', strip({ kind, defaultName })),
  exportText: async (kind, defaultName, contents) => {
    const path = await invoke<string | null>('pick_file', { kind, defaultName });
    if (!path) return null;
    await invoke<void>('write_text_file', { path, contents });
    return path;
  },
  answersCsv: (texts, results) => invoke<string>('answers_csv', { texts: texts satisfies TextIn[], results }),
  answersSheet: (texts, results) => invoke<string>('answers_sheet', { texts: texts satisfies TextIn[], results }),
  answersSummary: (results) => invoke<QuestionSummary[]>('answers_summary', { results }),
  summaryCsv: (results) => invoke<string>('summary_csv', { results }),
  judgeRecord: (model) => invoke<JudgeRecord | null>('judge_record', strip({ model })),
  reviewStart: (rubric, texts, results) => invoke<ReviewView>('review_start', { rubric, texts: texts satisfies TextIn[], results }),
  reviewList: () => invoke<ReviewEntry[]>('review_list'),
  reviewOpen: (dir) => invoke<ReviewView>('review_open', { dir }),
  reviewOpenAnswers: (answers, texts, rubric) => invoke<ReviewView>('review_open_answers', { answers, texts, rubric }),
  reviewLabel: (index, answers, skipped) => invoke<ReviewUpdate>('review_label', { index, answers, skipped }),
  reviewUndo: (index) => invoke<ReviewUpdate>('review_undo', { index }),
  reviewReport: (targetHalfWidth) => invoke<Report>('review_report', { targetHalfWidth }),
  reviewFitState: () => invoke<FitState>('review_fit_state'),
  reviewFit: ({ model, debias }, onProgress) =>
    invoke<Fitted>('review_fit', { ...strip({ model, debias }), onProgress: new Channel<Progress>(onProgress) }),
  calibrateResult: (file) => invoke<Fitted>('calibrate_result', { file }),
  listLabelsCurves: (dir) => invoke<LabelsCurveEntry[]>('list_labels_curves', strip({ dir })),
  loadLabelsCurve: (file) => invoke<LabelsCurveFile>('load_labels_curve', { file }),
  rubricLibraryList: () => invoke<RubricEntry[]>('rubric_library_list'),
  rubricLibrarySave: (rubric) => invoke<RubricEntry>('rubric_library_save', { rubric }),
  rubricLibraryDelete: (path) => invoke<void>('rubric_library_delete', { path }),
  recentList: () => invoke<Recent>('recent_list'),
  recentAdd: (kind, path) => invoke<Recent>('recent_add', { kind, path }),
  readTextsFile: (path) => invoke<string>('read_texts_file', { path }),
  sessionLoad: () => invoke<Session | null>('session_load'),
  sessionSave: (session) => invoke<void>('session_save', { session }),
  listScored: (dir) => invoke<ScoredEntry[]>('list_scored', strip({ dir })),
  loadScored: (file) => invoke<ScoredFile>('load_scored', { file }),
  rowTexts: (evalSet) => invoke<RowTexts>('row_texts', { evalSet }),
};

export const inTauri = (): boolean => typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;

/**
 * The browser stand-in (./mock.ts and its fixtures), in the dev server and the test build
 * (`vite build --mode test`) only. Vite writes both conditions as constants, so a production
 * build drops the import and ships none of the mock.
 */
const loadMock: (() => Promise<Backend>) | null =
  import.meta.env.DEV || import.meta.env.MODE === 'test' ? () => import('./mock').then((m) => m.createMockBackend()) : null;

let backend: Promise<Backend> | null = null;

/** The backend in use: Tauri's, or the mock outside Tauri in a dev or test build. */
export function getBackend(): Promise<Backend> {
  if (!backend) {
    backend = inTauri()
      ? Promise.resolve(tauriBackend)
      : loadMock
        ? loadMock()
        : Promise.reject(new Error('Readout runs inside its desktop app; this page has no backend in a plain browser (the browser stand-in is in `npm run dev` and the test build only).'));
  }
  return backend;
}

const call =
  <K extends keyof Backend>(k: K) =>
  async (...args: Parameters<Backend[K]>): Promise<Awaited<ReturnType<Backend[K]>>> => {
    const b = await getBackend();
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return await (b[k] as any)(...args);
    } catch (e) {
      throw toAppError(e);
    }
  };

export const scoreTexts = call('scoreTexts');
export const example = call('example');
export const loadRubric = call('loadRubric');
export const saveRubric = call('saveRubric');
export const listEvalSets = call('listEvalSets');
export const runEval = call('runEval');
export const runJury = call('runJury');
export const pairwiseStandings = call('pairwiseStandings');
export const cancelRun = call('cancelRun');
export const saveResult = call('saveResult');
export const calibrateResult = call('calibrateResult');
export const listResults = call('listResults');
export const loadResult = call('loadResult');
export const compareResults = call('compareResults');
export const listModels = call('listModels');
export const addModel = call('addModel');
export const deriveModel = call('deriveModel');
export const setChatTemplate = call('setChatTemplate');
export const chatTemplateNames = call('chatTemplateNames');
export const catalogue = call('catalogue');
export const pullModel = call('pullModel');
export const cancelPull = call('cancelPull');
export const getSettings = call('getSettings');
export const setSettings = call('setSettings');
export const pickFile = call('pickFile');
export const exportText = call('exportText');
export const answersCsv = call('answersCsv');
export const answersSheet = call('answersSheet');
export const answersSummary = call('answersSummary');
export const summaryCsv = call('summaryCsv');
export const judgeRecord = call('judgeRecord');
export const reviewStart = call('reviewStart');
export const reviewList = call('reviewList');
export const reviewOpen = call('reviewOpen');
export const reviewOpenAnswers = call('reviewOpenAnswers');
export const reviewLabel = call('reviewLabel');
export const reviewUndo = call('reviewUndo');
export const reviewReport = call('reviewReport');
export const reviewFitState = call('reviewFitState');
export const reviewFit = call('reviewFit');
export const listLabelsCurves = call('listLabelsCurves');
export const loadLabelsCurve = call('loadLabelsCurve');
export const rubricLibraryList = call('rubricLibraryList');
export const rubricLibrarySave = call('rubricLibrarySave');
export const rubricLibraryDelete = call('rubricLibraryDelete');
export const recentList = call('recentList');
export const recentAdd = call('recentAdd');
export const readTextsFile = call('readTextsFile');
export const sessionLoad = call('sessionLoad');
export const sessionSave = call('sessionSave');
export const listScored = call('listScored');
export const loadScored = call('loadScored');
export const rowTexts = call('rowTexts');

/**
 * A failed call, as every page gets it: the shell's `AppError` (one plain sentence, a fix the
 * page can offer as a button, the library's own text for a folded "Details"). Tauri rejects with
 * the error object the command's `Err` serialises to; the mock throws the same shape.
 */
export class AppError extends Error implements ShellError {
  fix: Fix | null;
  details: string | null;
  constructor(e: ShellError) {
    super(e.message);
    this.name = 'AppError';
    this.fix = e.fix ?? null;
    this.details = e.details ?? null;
  }
}

export type { Fix };

/** Whatever a call threw, as an `AppError` (a plain string or Error becomes its message). */
export function toAppError(e: unknown): AppError {
  if (e instanceof AppError) return e;
  if (e && typeof e === 'object' && typeof (e as ShellError).message === 'string' && !(e instanceof Error)) {
    const o = e as Partial<ShellError> & { message: string };
    return new AppError({ message: o.message, fix: o.fix ?? null, details: o.details ?? null });
  }
  return new AppError({ message: errorMessage(e), fix: null, details: null });
}

/**
 * The message to show for a failed call: the error's plain sentence (an `AppError`'s, or any
 * Error's), a string as it is, an object's `message` when it has one.
 */
export function errorMessage(e: unknown): string {
  if (typeof e === 'string') return e;
  if (e instanceof Error) return e.message;
  if (e && typeof e === 'object') {
    const o = e as Record<string, unknown>;
    if (typeof o.message === 'string') return o.message;
    try {
      return JSON.stringify(e);
    } catch {
      /* fall through */
    }
  }
  return String(e);
}
