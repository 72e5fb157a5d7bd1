// A stand-in backend for a plain browser, in the dev server and the test build only (src/api.ts
// imports it behind `import.meta.env`, so the app's bundle holds none of it; tests/no-mock.mjs
// checks). It answers every command of the IPC contract with data of the real shapes (the types
// ts-rs generates from the Rust ones), and every figure it shows was made by the Rust library,
// never computed here: the result files, the bundled example, the models, their DERIVED figures,
// the metrics of runs stopped part way and the comparisons are fixtures that src-tauri's `cargo
// test` writes into ./fixtures/ from the committed bench/results files and the library (CI fails
// when they are stale). Only the answers to texts are made up, from word overlap
// (deterministic): there is no model in a browser.
//
// Flags (URL query):
//   ?slow=1          every call takes 3 s longer and a run takes ~10 s (to see "running" states)
//   ?empty=1         no result files, no models (to see "empty" states)
//   ?fail=a,b        the named commands fail (e.g. fail=list_results,list_models,add_model)
//   ?badset=1        the eval-set folder also holds a set that cannot be read (line 2, `options`)
//   ?fallback=1      the model runs on the CPU because the GPU could not be used (the engine's reason)
//   ?old=1           the result files are as written before the risk–coverage curve and position
//                    bias existed (those fields left out)
//   (with ?empty=1 the app has no model at all: the first-start offer shows; a download from the
//    hub takes ~2 s, ~12 s with ?slow=1, and pulls the catalogue's models only)
// and inputs that fail the way the real backend does:
//   a text containing FAIL           → score_texts fails (prompt longer than the context)
//   an eval set whose path ends bad.jsonl → run_eval refuses the set (line 2, field `options`)
//   a rubric path containing "bad"   → load_rubric fails (field `questions.topic.criteria`)
//   the calibration file (fitted on a cyclic run) with another debias mode → refused as the
//   library refuses it; with cyclic, its temperature sharpens the made-up answers
// Review: the texts of examples/support-tickets.csv, scored with one option order and no other
// option, get the default model's answers (the shell's tests commit them); only those can be
// reviewed (the queue, in the library's order, is the shell's `review_start` answer), and the
// summary is the library's report for the label states its tests recorded: a person answering
// the queue's first texts in order with the answers of `fixtures/review.json` (`person`).
//   an answers file whose path contains "bad" → refused at its line 2, as the library does
// "Fit the judge to my labels": how far the labels are from a fit (the library's count, recorded
// for the same label states as the reports) and, once every text is labelled, the library's fit
// of the default model with one option order on them (fitted on the committed run of the default
// model on the person's labels, src-tauri/tests/data/support-tickets.labels.result.json); the
// calibration file it writes then scores the made-up answers with its temperature.
// Results: beside the two runs, the labels-curve file bench/results holds (`readout bench labels`).
import type { Backend, ScoreRequest } from './api';
import exampleFixture from './fixtures/example.json';
import cyclicFixture from './fixtures/smollm2-135m-instruct.q4_1_3shot_cyclic.json';
import noneFixture from './fixtures/smollm2-135m-instruct.q4_1_3shot_none.json';
import mockFixture from './fixtures/mock.json';
import reviewFixture from './fixtures/review.json';
import labelsCurveFixture from './fixtures/labels-curve.json';
import rowTextsFixture from './fixtures/row-texts.json';
// `readout calibrate` on the default model's 3-shot run with every rotation (the run of
// ./fixtures/smollm2-135m-instruct.q4_1_3shot_cyclic.json): what "Calibrate from this run" gives
// for that run (src-tauri's tests check the command writes the same file).
import juryFixture from '../../bench/results/jury-authored144-cyclic-3shot-smollm2-qwen2.5-equal.json';
import cyclicCalibrationFile from '../../bench/results/quality/smollm2-135m-instruct.q4_1_3shot_cyclic.calibration.json';
import type { AppError } from './gen/AppError';
import type { Fix } from './gen/Fix';
import type { MockFixtures } from './gen/MockFixtures';
import type { MockReview } from './gen/MockReview';
import type {
  JuryFile,
  CalibrationFile,
  CriterionResult,
  DebiasMode,
  EvalSetEntry,
  Example,
  Fitted,
  FitState,
  LabelsCurveEntry,
  LabelsCurveFile,
  RowTexts,
  ScoredEntry,
  ScoredFile,
  ModelEntry,
  OptionResult,
  PickKind,
  QuestionSummary,
  ResultEntry,
  ResultFile,
  ReviewEntry,
  ReviewLabel,
  ReviewUpdate,
  Recent,
  ReviewView,
  Rubric,
  ScoreOptions,
  ScoreProgress,
  Session,
  Settings,
  TextResult,
} from './types';

const query = new URLSearchParams(typeof location !== 'undefined' ? location.search : '');
const SLOW = query.get('slow') === '1';
const EMPTY = query.get('empty') === '1';
const FAIL = new Set((query.get('fail') ?? '').split(',').filter(Boolean));
const BADSET = query.get('badset') === '1';
const FALLBACK = query.get('fallback') === '1';
const OLD = query.get('old') === '1';
/** A Qwen3.5 decision model among the models (the fixture's OneJev 0.8B). */
const DECISION = query.get('decision') === '1';

/** A command's error as the shell gives it (`AppError`): one plain sentence, the fix the window
 * offers as a button, and the library's own text for Details. */
const fail = (message: string, details: string | null = null, fix: Fix | null = null): AppError => ({ message, fix, details });

/** The file name of a path, as the shell names a file in a message. */
const nameOf = (path: string) => path.split('/').pop() ?? path;

/** The shell's error for a bad line of a file (`readout::Error::BadInput`): its place and reason, the library's text under Details. */
const badLine = (file: string, field: string, reason: string, line = 1) =>
  fail(`Line ${line} of ${nameOf(file)}, field “${field}”: ${reason.replace(/`([^`]*)`/g, '“$1”')}.`, `${file}:${line}: field \`${field}\`: ${reason}`);

/** The shell's error for a file that is not there (`AppError::io`). */
const missing = (path: string) => fail(`${nameOf(path)} is not there: it may have been moved, renamed or deleted.`, `${path}: No such file or directory (os error 2)`);

/** The shell's error for the bad set (the library's message, as `EvalSet::load` words it, under Details). */
const badSet = (path: string) =>
  fail(
    `Line 2 of ${nameOf(path)}, field “options”: has 0 option(s); a criterion needs at least 2.`,
    `${path}:2: field \`options\`: has 0 option(s); a criterion needs at least 2. Nothing was scored: fix that line, or skip bad lines (\`--skip-bad\` in the CLI, *Skip bad lines* in the app) to score the rest and record them`,
    { kind: 'skip_bad_lines' },
  );

/** `kept` of `total` bytes as the shell words them (`error::mb_of`): "23 of 253 MB", a tenth under 10 MB. */
const megabytes = (kept: number, total: number) => {
  const mb = (b: number) => (b / 1e6 < 10 ? (b / 1e6).toFixed(1) : (b / 1e6).toFixed(0));
  return `${mb(kept)} of ${mb(total)} MB`;
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const latency = (ms = 120) => sleep(ms + (SLOW ? 3000 : 0));
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** Fail `command` when the page asked for it (`?fail=command`): `message` in the app's words,
 * `details` the library's. */
function failIf(command: string, message: string, details: string | null = null, fix: Fix | null = null): void {
  if (FAIL.has(command)) throw fail(message, details, fix);
}

// JSON imports are typed by their contents (plain strings where the types have unions): the
// casts say which generated type each fixture is, as the shell's answer it was recorded from.
const FIXTURES = mockFixture as unknown as MockFixtures;
const REVIEW = reviewFixture as unknown as MockReview;
const EXAMPLE = exampleFixture as unknown as Example;
/** A result file as written before the risk–coverage curve and position bias (?old=1). */
const asOld = (r: ResultFile): ResultFile => {
  if (!OLD || !r.metrics) return r;
  const { selective: _s, position_bias: _p, ...metrics } = r.metrics;
  return { ...r, metrics };
};
/** The two bundled runs, by the debias mode they were made with. */
const RUNS: { debias: DebiasMode; file: ResultFile }[] = [
  { debias: 'cyclic', file: asOld(cyclicFixture as unknown as ResultFile) },
  { debias: 'none', file: asOld(noneFixture as unknown as ResultFile) },
];
/** Where the mock's file dialog finds a calibration file, and what the library reads from it. */
const CALIBRATION_PATH = `bench/results/quality/${FIXTURES.calibration.file}`;
/** The calibration files the mock knows, by path: the bundled one, and those a review's fit wrote
 * ("Fit the judge to my labels": the library's fit, recorded by the shell's tests). */
const CALIBRATIONS = new Map<string, { file: string; debias: DebiasMode; temperature: number }>([[CALIBRATION_PATH, FIXTURES.calibration]]);

/** The library's refusal of a calibration fitted with another debias mode (`RunConfig::build`). */
function checkCalibration(path: string | undefined, debias: DebiasMode): void {
  if (!path) return;
  const c = CALIBRATIONS.get(path);
  if (!c) throw missing(path);
  if (c.debias !== debias) {
    throw fail(
      `This temperature was fitted with the option order “${c.debias}”: choose that order, or a temperature fitted with this one.`,
      `${c.file} was fitted on a run with --debias ${c.debias}; use --debias ${c.debias} with it, or fit one on a run with --debias ${debias}`,
    );
  }
}
/** The bundled run a mock run of `debias` replays. */
const runFor = (debias: DebiasMode) => (debias === 'none' ? RUNS[1] : RUNS[0]);

// ---- models (made by the library from their published shapes) ----

const [SMOLLM2, QWEN3_06B, QWEN3_4B, GEMMA3_270M, ONEJEV] = FIXTURES.models;

/** The shell's refusal of a model without a chat template (`error::no_template`): the family its
 * architecture most likely expects as the fix, the names under Details. */
const noTemplate = (path: string) => {
  const family = FIXTURES.models.find((m) => m.path === path)?.architecture.startsWith('gemma') ? 'gemma' : 'chatml';
  return fail(
    `This model has no chat template, the way of writing a conversation it was trained on; it is most likely ${family}'s.`,
    `${path}: the model carries no chat template (a base model?). Name the chat template to read it with: --chat-template NAME|FILE, where NAME is one of ${FIXTURES.chatTemplateNames.join(', ')} (llama.cpp's names), or FILE a Jinja template`,
    { kind: 'use_template', name: family, model: path },
  );
};

/** Where the mock's hub cache keeps a pulled file. */
const cachePath = (spec: string) => {
  const [repo, file] = spec.split(':');
  return `/home/me/.cache/huggingface/hub/models--${repo.replace('/', '--')}/snapshots/0123456789abcdef0123456789abcdef01234567/${file}`;
};

// ---- scoring texts ----

/** A CSV field, quoted where it must be (as the csv crate writes it). */
const sheetField = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The library's `answers::summary`: per question, the texts per option, those with no answer,
 * and the flagged ones (close, changed on reorder, or not given). */
function summaryOf(results: TextResult[]): QuestionSummary[] {
  const first = results[0];
  if (!first) return [];
  return first.criteria.map((head, k) => {
    const q: QuestionSummary = {
      criterion: head.criterion,
      type: head.type,
      texts: 0,
      options: head.options.map((o) => ({ id: o.id, description: o.description, count: 0 })),
      no_answer: 0,
      close: 0,
      order_unstable: null,
      flagged: 0,
    };
    for (const r of results) {
      const c = r.criteria[k];
      if (!c) continue;
      q.texts += 1;
      const o = q.options.find((x) => x.id === c.chosen);
      if (o) o.count += 1;
      else q.no_answer += 1;
      if (c.close) q.close += 1;
      if (c.order_unstable !== null) q.order_unstable = (q.order_unstable ?? 0) + (c.order_unstable ? 1 : 0);
      if (c.close || c.order_unstable === true || c.abstained) q.flagged += 1;
    }
    return q;
  });
}

/** FNV-1a, for deterministic made-up numbers. */
function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

const words = (s: string) => new Set(s.toLowerCase().match(/[a-z]{3,}/g) ?? []);

interface Opt {
  id: string;
  description: string;
}

function optionsOf(q: Rubric['questions'][string]): Opt[] {
  if (q.type === 'noul') {
    return [
      { id: 'yes', description: 'Yes' },
      { id: 'no', description: 'No' },
    ];
  }
  if (q.type === 'score') {
    return ((q.criteria as string[]) ?? []).map((d, i) => ({ id: String(i), description: d }));
  }
  return Object.entries((q.criteria as Record<string, string>) ?? {}).map(([id, description]) => ({ id, description }));
}

/** The rubric checks of `load_rubric`/`save_rubric`. Their words are typed here by hand: no
 * fixture carries the library's rubric errors (its own add ` (the format: docs/rubric.md)`). */
function checkRubric(rubric: Rubric, file: string): void {
  const names = Object.keys(rubric.questions ?? {});
  if (!rubric.name?.trim()) throw badLine(file, `name`, `must not be empty`);
  if (names.length === 0) throw badLine(file, `questions`, `has no questions; a rubric needs at least 1`);
  for (const name of names) {
    const q = rubric.questions[name];
    if (!q.instructions?.trim()) throw badLine(file, `questions.${name}.instructions`, `must not be empty`);
    const opts = optionsOf(q);
    if (q.type !== 'noul' && opts.length < 2) {
      throw badLine(file, `questions.${name}.criteria`, `has ${opts.length} option(s); a criterion needs at least 2`);
    }
    if (opts.length > 26) {
      throw badLine(file, `questions.${name}.criteria`, `has ${opts.length} options; at most 26 fit the letters A-Z`);
    }
    for (const o of opts) {
      if (!o.description.trim()) {
        throw `${file}:1: field \`questions.${name}.criteria\`: option \`${o.id}\` has an empty description`;
      }
    }
  }
}

/** Made-up answers (there is no model here); `checked`: more than one option order was scored.
 * The options' abstain thresholds and temperature act on them as the library's act on a model's. */
function scoreOne(text: string, name: string, q: Rubric['questions'][string], checked: boolean, settings: ScoreOptions): CriterionResult {
  const opts = optionsOf(q);
  const tw = words(text);
  const logits = opts.map((o, i) => {
    let overlap = 0;
    for (const w of words(o.description)) if (tw.has(w) || tw.has(w.replace(/s$/, ''))) overlap += 1;
    const noise = (hash(`${text}|${name}|${o.id}`) % 1000) / 1000;
    const position = checked ? 0 : 0.35 * (opts.length - i) / opts.length; // the small model's taste for "A"
    return 1.6 * overlap + 0.9 * noise + position;
  });
  if (q.type === 'noul') {
    const hints = ['refund', 'money', 'back', 'chargeback', 'credit', 'charged', 'twice'];
    const hit = hints.some((h) => tw.has(h));
    logits[0] += hit ? 1.4 : -0.4;
  }
  const temperature = settings.calibration ? (CALIBRATIONS.get(settings.calibration)?.temperature ?? 1) : 1;
  const m = Math.max(...logits);
  const exps = logits.map((l) => Math.exp((l - m) / temperature));
  const z = exps.reduce((a, b) => a + b, 0);
  const options: OptionResult[] = opts.map((o, i) => ({ ...o, probability: exps[i] / z }));
  const sorted = [...options].sort((a, b) => b.probability - a.probability);
  const margin = sorted[0].probability - (sorted[1]?.probability ?? 0);
  const letterMass = 0.62 + (hash(`${name}|${text}|mass`) % 350) / 1000;
  // The letter mass first, as the library decides.
  const abstained =
    settings.abstainLetterMass !== undefined && letterMass < settings.abstainLetterMass
      ? 'letter_mass'
      : settings.abstainBelow !== undefined && sorted[0].probability < settings.abstainBelow
        ? 'confidence'
        : undefined;
  // Keys in the order the Rust struct serialises them.
  const result = {
    criterion: name,
    type: q.type,
    options,
    chosen: abstained ? null : sorted[0].id,
    probability: sorted[0].probability,
  } as CriterionResult;
  if (abstained) result.abstained = abstained;
  if (q.type === 'score') result.expected_level = options.reduce((s, o, i) => s + i * o.probability, 0);
  result.margin = margin;
  result.close = margin < 0.1;
  result.order_unstable = checked ? margin < 0.12 || hash(`${text}|${name}`) % 5 === 0 : null;
  result.letter_mass = letterMass;
  return result;
}

/** A jury's answer (the shell's `readout::jobs::jury::score_panel`): each judge reads the text as
 * `scoreOne` does with noise of its own, the pool is the mean of their probabilities, and
 * `disagree` says their top options differ. */
function juryOne(text: string, name: string, q: Rubric['questions'][string], checked: boolean, settings: ScoreOptions, judges: string[]): CriterionResult {
  const plain = { ...settings, abstainBelow: undefined, abstainLetterMass: undefined };
  const each = judges.map((_, j) => scoreOne(j === 0 ? text : `${text} ${'~'.repeat(j)}`, name, q, checked, plain));
  const w = 1 / judges.length;
  const pooled = each[0].options.map((o, i) => ({ ...o, probability: each.reduce((s, r) => s + w * r.options[i].probability, 0) }));
  const sorted = [...pooled].sort((a, b) => b.probability - a.probability);
  const margin = sorted[0].probability - (sorted[1]?.probability ?? 0);
  const tops = each.map((r) => r.options.reduce((b, o, i) => (o.probability > r.options[b].probability ? i : b), 0));
  const disagree = tops.some((t) => t !== tops[0]);
  const letterMass = each.reduce((s, r) => s + w * (r.letter_mass ?? 0), 0);
  const abstained =
    settings.abstainLetterMass !== undefined && letterMass < settings.abstainLetterMass
      ? 'letter_mass'
      : settings.abstainBelow !== undefined && sorted[0].probability < settings.abstainBelow
        ? 'confidence'
        : disagree && settings.abstainOnDisagreement
          ? 'disagreement'
          : undefined;
  const result = { criterion: name, type: q.type, options: pooled, chosen: abstained ? null : sorted[0].id, probability: sorted[0].probability } as CriterionResult;
  if (abstained) result.abstained = abstained;
  if (q.type === 'score') result.expected_level = pooled.reduce((s, o, i) => s + i * o.probability, 0);
  result.margin = margin;
  result.close = margin < 0.1;
  result.order_unstable = checked ? each.some((r) => r.order_unstable === true) : null;
  result.letter_mass = letterMass;
  result.judges = each.map((r, j) => ({
    model: judges[j] ? ([SMOLLM2, QWEN3_06B, GEMMA3_270M].find((m) => m.path === judges[j])?.name ?? judges[j]) : 'SmolLM2 135M Instruct (Q4_1)',
    weight: w,
    chosen: r.chosen,
    probability: r.probability,
    probabilities: r.options.map((o) => o.probability),
    order_unstable: r.order_unstable ?? null,
  }));
  result.disagree = disagree;
  return result;
}

// ---- review (the library's queue and reports, recorded by the shell's tests) ----

/** Whether these are the texts the review fixture was made for (examples/support-tickets.csv). */
const areReviewTexts = (texts: { text: string }[]) =>
  texts.length === REVIEW.texts.length && texts.every((t, i) => t.text === REVIEW.texts[i].text);

/** A label state as one string, to find the report the library made for it. */
const labelsKey = (labels: { index: number; answers: (number | null)[]; skipped: boolean }[]) =>
  [...labels]
    .sort((a, b) => a.index - b.index)
    .map((l) => `${l.index}:${l.answers.map((a) => (a === null ? '-' : a)).join(',')}:${l.skipped ? 's' : ''}`)
    .join(';');

/** A review the mock holds: where it lives and its labels by text index. */
interface MockOpenReview {
  dir: string;
  labelsFile: string;
  answersFile: string;
  created: string;
  labels: Map<number, ReviewLabel>;
  /** The fit on its labels ("Fit the judge to my labels"), kept beside them. */
  fitted?: Fitted;
}

/** The labels-curve file the mock's results folder holds (`readout bench labels`, as the shell reads it). */
const LABELS_CURVE = labelsCurveFixture as unknown as LabelsCurveFile;
const ROW_TEXTS = rowTextsFixture as unknown as RowTexts;

/** The scorings kept in the results folder, newest first, as the shell keeps one per Score. */
const SCORED: { file: string; scored: ScoredFile }[] = [];
function keepScored(req: ScoreRequest, results: TextResult[], folder: string): void {
  if (results.length === 0) return;
  const created = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const rubric = req.rubric as unknown as { name?: string };
  const model = clone(RUNS[0].file.model);
  const config = { ...clone(RUNS[0].file.config), debias: req.debias, abstain_below: req.options?.abstainBelow, abstain_letter_mass: req.options?.abstainLetterMass };
  const scored: ScoredFile = {
    schema: 'readout.scored',
    schema_version: 1,
    created,
    model,
    rubric: req.rubric,
    config,
    status: results.length < req.texts.length ? 'partial' : 'complete',
    texts: req.texts.map((t) => (t.id ? { id: t.id, text: t.text } : { text: t.text })),
    results: clone(results),
  };
  const file = `${folder}/${created.replace(/:/g, '-')}_${(rubric.name ?? '').replace(/[^\w.-]+/g, '-')}_${model.file.replace(/\.gguf$/, '')}.scored.json`;
  SCORED.unshift({ file, scored });
}
const LABELS_CURVE_PATH = `bench/results/labels-curve-${(LABELS_CURVE.source.file ?? 'run.json').replace(/\.json$/, '')}.json`;

// ---- the mock backend ----

/** Where the mock keeps what the app keeps in its data folder (a reload stands in for a restart). */
const KEYS = { rubrics: 'readout-mock-rubrics', recent: 'readout-mock-recent', session: 'readout-mock-session' };
function stored<T>(key: string, fallback: T): T {
  try {
    const v = localStorage.getItem(key);
    return v === null ? fallback : (JSON.parse(v) as T);
  } catch {
    return fallback;
  }
}
function store(key: string, value: unknown): void {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // A browser without storage: nothing is kept, as in a first start.
  }
}
const csvField = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
/** The texts files the mock's dialog gives, by path: the example tickets, as in the repository. */
const MOCK_FILES: Record<string, string> = {
  'examples/support-tickets.csv': ['id,text', ...REVIEW.texts.map((t) => `${csvField(t.id ?? '')},${csvField(t.text)}`)].join('\n') + '\n',
};


/** A result file the mock holds, with the bundled run it came from (for its comparisons). */
interface Held {
  file: ResultFile;
  from: DebiasMode;
}

export function createMockBackend(): Backend {
  let settings: Settings = {
    benchDir: 'bench/results',
    defaultModel: SMOLLM2.path,
    device: 'auto',
    threads: 0,
    deviceInUse: 'cpu (2 threads)',
    deviceFallback: FALLBACK ? 'CUDA not usable (the CUDA driver (libcuda.so) was not found); running on CPU' : null,
    models: [],
    chatTemplates: {},
  };
  const models: ModelEntry[] = EMPTY ? [] : DECISION ? [clone(SMOLLM2), clone(ONEJEV)] : [clone(SMOLLM2), clone(QWEN3_06B), clone(GEMMA3_270M)];
  /** Bytes a stopped download kept, by spec (the next pull resumes from there). */
  const kept = new Map<string, number>();
  let pull: { cancelled: boolean } | null = null;
  /** A model that cannot be read without a chat template chosen for it. */
  const needsTemplate = (path: string | undefined) => {
    const m = models.find((x) => x.path === (path ?? settings.defaultModel));
    return !!m && !m.has_chat_template && !m.chat_template;
  };
  const results = new Map<string, Held>();
  if (!EMPTY) {
    for (const r of RUNS) results.set(`bench/results/${fileName(r.file)}`, { file: r.file, from: r.debias });
  }
  let run: { cancelled: boolean } | null = null;
  /** Reviews started (newest last) and the one open. */
  const reviews: MockOpenReview[] = [];
  /** Reviews of answers files opened from the dialog (their labels beside them, not listed). */
  const beside: MockOpenReview[] = [];
  let review: MockOpenReview | null = null;
  const counted = (r: MockOpenReview) => {
    const ls = [...r.labels.values()];
    return {
      texts: REVIEW.texts.length,
      labelled: ls.filter((l) => !l.skipped && (l.labels ?? []).some((a) => a !== null)).length,
      skipped: ls.filter((l) => l.skipped).length,
    };
  };
  const viewOf = (r: MockOpenReview): ReviewView => {
    const v = clone(REVIEW.view);
    v.dir = r.dir;
    v.answers_file = r.answersFile;
    v.labels_file = r.labelsFile;
    v.queue = v.queue.map((i) => ({ ...i, ...(r.labels.get(i.index) ?? { labels: null, skipped: false }) }));
    v.counts = counted(r);
    return v;
  };
  const openReview = (): MockOpenReview => {
    if (!review) throw fail('No review is open: start one from scored texts, or open one.');
    return review;
  };
  const update = (r: MockOpenReview, index: number): ReviewUpdate => ({
    index,
    ...(r.labels.get(index) ?? { labels: null, skipped: false }),
    counts: counted(r),
  });
  /** The recorded step of the library's figures for a review's labels, if the tests recorded it. */
  const stepOf = (r: MockOpenReview) => {
    const key = labelsKey([...r.labels.entries()].map(([index, l]) => ({ index, answers: l.labels ?? [], skipped: l.skipped })));
    return REVIEW.steps.find((s) => labelsKey(s.labels) === key);
  };
  const noStep = `the browser mock has the library’s reports for ± ${REVIEW.targetHalfWidth * 100}% and for the recorded person’s labels only (the queue’s first ${REVIEW.stepTexts} texts answered in order with the answers of fixtures/review.json, then all ${REVIEW.texts.length})`;
  /** Rows done by stopped runs, by their options: what a partial file in the results folder holds. */
  const partials = new Map<string, number>();
  let lastResult: Held | null = null;

  function fileName(r: ResultFile): string {
    const model = r.model.file.replace(/\.gguf$/i, '').toLowerCase();
    const base = `${r.eval_set.name}_${model}_${r.config.mode}_${r.config.shots}shot_${r.config.debias}`;
    return `${base}${r.status === 'partial' ? '_partial' : ''}.json`;
  }

  function entryOf(file: string, r: ResultFile): ResultEntry {
    return {
      file,
      // The fixtures are the shell's `load_result` answers: the model already named as the library names it.
      model: r.model.name,
      mode: r.config.mode,
      shots: r.config.shots,
      debias: r.config.debias,
      mean_family_balanced_accuracy: r.metrics?.mean_family_balanced_accuracy ?? null,
      chance: chanceOf(r),
      order_unstable: r.metrics?.overall.order_unstable ?? null,
      seconds: r.timing.wall_seconds,
      rows: r.rows.length,
      status: r.status,
    };
  }

  /** The library's figure for guessing (`Summary::chance`, filled on load for older files). */
  function chanceOf(r: ResultFile): number | null {
    return (r.metrics as { chance?: number | null } | null)?.chance ?? null;
  }

  function findResult(file: string): Held {
    const r = results.get(file) ?? [...results.entries()].find(([k]) => k.endsWith(file))?.[1];
    if (!r) throw missing(file);
    return r;
  }

  return {
    async scoreTexts(req: ScoreRequest, onProgress: (p: ScoreProgress) => void): Promise<TextResult[]> {
      await latency(300);
      failIf('score_texts', 'The model failed while working out an answer.', 'tensor computation failed: mock failure', { kind: 'retry' });
      checkRubric(req.rubric, 'rubric');
      if (req.texts.length === 0) throw fail('There is no text to score: paste one or open a file.');
      if (needsTemplate(req.model)) throw noTemplate(req.model ?? settings.defaultModel);
      const checked = req.debias !== 'none';
      const options = req.options ?? {};
      for (const [flag, v] of [
        ['--abstain-below', options.abstainBelow],
        ['--abstain-letter-mass', options.abstainLetterMass],
      ] as const) {
        if (v !== undefined && !(v >= 0 && v <= 1)) throw fail('These settings cannot be used together.', `${flag} takes a probability from 0 to 1, not ${v}`);
      }
      checkCalibration(options.calibration, req.debias);
      // Checked first, as the shell refuses a text before scoring any.
      req.texts.forEach((t, index) => {
        if (t.text.includes('FAIL') && !options.truncateMiddle) {
          throw fail(
            'A text is too long for the model: its prompt is 9312 tokens, where the model reads at most 8192.',
            `text ${index + 1}${t.id ? ` (${t.id})` : ''}: the prompt is 9312 tokens (9000 of them the text) but the model's context holds 8192, 1120 too many`,
            { kind: 'truncate_middle' },
          );
        }
        if (!t.text.trim()) throw fail(`Text ${index + 1} is empty.`);
      });
      const me = { cancelled: false };
      run = me;
      const out: TextResult[] = [];
      // The example CSV with one order and no option: the default model's answers.
      const real = areReviewTexts(req.texts) && !options.judges?.length && req.debias === 'none' && !options.abstainBelow && !options.abstainLetterMass && !options.calibration;
      for (const [index, t] of req.texts.entries()) {
        if (real) {
          await latency(40);
          out.push(clone(REVIEW.results[index]));
          onProgress({ done: index + 1, total: req.texts.length });
          if (me.cancelled) break;
          continue;
        }
        await latency(150 * (checked ? 2 : 1));
        const r: TextResult = { index, criteria: [] };
        if (t.id) r.id = t.id;
        const judges = options.judges && options.judges.length > 1 ? options.judges : null;
        r.criteria = Object.entries(req.rubric.questions).map(([name, q]) =>
          judges ? juryOne(t.text, name, q, checked, options, judges) : scoreOne(t.text, name, q, checked, options),
        );
        out.push(r);
        onProgress({ done: index + 1, total: req.texts.length });
        if (me.cancelled) break;
      }
      if (!(options.judges && options.judges.length > 1)) keepScored(req, out, settings.benchDir);
      return out;
    },

    async example() {
      await latency();
      return clone(EXAMPLE);
    },

    async loadRubric(path) {
      await latency();
      failIf('load_rubric', 'That file or folder is not there: it may have been moved, renamed or deleted.', `${path}: No such file or directory (os error 2)`);
      if (path.includes('bad')) {
        throw badLine(path, `questions.topic.criteria`, `has 1 option(s); a criterion needs at least 2`);
      }
      return clone(EXAMPLE.rubric);
    },

    async saveRubric(path, rubric) {
      await latency();
      failIf('save_rubric', 'Readout is not allowed to open that file or folder.', `${path}: Permission denied (os error 13)`);
      checkRubric(rubric, path);
    },

    async listEvalSets(): Promise<EvalSetEntry[]> {
      await latency();
      failIf('list_eval_sets', 'evalsets is not there: it may have been moved, renamed or deleted.', 'bench/evalsets: No such file or directory (os error 2)');
      const sets: EvalSetEntry[] = [{ name: 'authored144', path: 'bench/evalsets/authored144.jsonl', rows: 144 }];
      if (BADSET) {
        const path = 'bench/evalsets/bad-options.jsonl';
        sets.push({ name: 'bad-options', path, rows: 0, error: { ...badSet(path), line: 2, field: 'options' } });
      }
      return sets;
    },

    async pairwiseStandings(file) {
      await latency();
      // The mock's results are runs of authored144, none of them pairwise.
      findResult(file);
      return null;
    },

    async runJury(req, onProgress) {
      await latency(200);
      failIf('run_jury', 'The model failed while working out an answer.', 'tensor computation failed: mock failure', { kind: 'retry' });
      if (run) throw fail('A run is already going: wait for it, or cancel it.');
      const judges = req.judges ?? [];
      if (judges.length < 2) throw fail('A jury needs at least two judges.');
      if (req.calibration) throw fail('A jury has no temperature of its own: run it without one.');
      // Each judge in turn, then the pool: the committed jury of the default model and Qwen2.5-Coder.
      const me = { cancelled: false };
      run = me;
      try {
        const total = 144;
        const started = performance.now();
        for (const [judge] of judges.entries()) {
          for (const done of [0, 48, 96, 144]) {
            await sleep(SLOW ? 800 : 150);
            if (me.cancelled) throw fail('Stopped: no jury is made of a partial run.');
            onProgress({ judge, judges: judges.length, progress: { done, total, elapsed_seconds: (performance.now() - started) / 1000 } });
          }
        }
      } finally {
        run = null;
      }
      return clone(juryFixture) as unknown as JuryFile;
    },

    async runEval(req, onProgress) {
      await latency(200);
      failIf('run_eval', 'The model failed while working out an answer.', 'tensor computation failed: mock failure', { kind: 'retry' });
      if (run) throw fail('A run is already going: wait for it, or cancel it.');
      const bad = req.evalSet.endsWith('bad.jsonl') || req.evalSet.endsWith('bad-options.jsonl');
      if (bad && !req.skipBad) throw badSet(req.evalSet);
      checkCalibration(req.calibration, req.debias);
      const source = runFor(req.debias);
      const total = source.file.rows.length;
      // The run moves through the row counts the library summarised a stopped run at.
      const steps = FIXTURES.partials.filter((p) => p.debias === source.debias);
      const pause = ((SLOW ? 10 : 2) * 1000) / steps.length;
      // Resuming: the rows a stopped run of these options finished are kept (the shell reads
      // them from the partial file it left in the results folder).
      const key = `${req.evalSet}|${req.debias}|${req.shots}|${req.mode}`;
      if (req.resume && !partials.has(key)) throw fail('There is no stopped run of these choices to go on with; run it from the start.');
      const me = { cancelled: false };
      run = me;
      const started = performance.now();
      let done = req.resume ? (partials.get(key) ?? 0) : 0;
      try {
        onProgress({ done, total, elapsed_seconds: 0 });
        for (const step of steps) {
          if (step.rows <= done) continue;
          await sleep(pause);
          if (me.cancelled) break;
          done = step.rows;
          onProgress({ done, total, elapsed_seconds: (performance.now() - started) / 1000 });
        }
      } finally {
        run = null;
      }
      if (!me.cancelled) done = total;
      if (me.cancelled) partials.set(key, done);
      else partials.delete(key);
      const r = clone(source.file);
      if (bad) r.eval_set.skipped = [{ line: 2, field: 'options', reason: 'has 0 option(s); a criterion needs at least 2' }];
      r.created = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      r.config.mode = req.mode;
      r.config.shots = req.shots;
      r.config.debias = req.debias;
      r.config.levers.prune_head = req.pruneHead;
      r.config.levers.prefix_tree = req.prefixTree ?? true;
      r.config.levers.batched_suffixes = req.batchedSuffixes ?? true;
      r.config.levers.trim = req.trim ?? true;
      if (req.passTokens) r.config.levers.pass_tokens = req.passTokens;
      if (req.prompt === 'terse') r.config.prompt_version = 'readout-terse-v1';
      // The temperature is recorded as the library records it (the replayed figures are the
      // bundled run's, without it).
      if (req.calibration) r.config.calibration = clone(FIXTURES.calibration);
      const model = models.find((m) => m.path === req.model);
      if (model) {
        r.model.name = model.name;
        r.model.file = model.path.split('/').pop() ?? model.path;
        r.model.architecture = model.architecture;
        r.model.quantisation = model.quantisation;
        r.model.parameters = model.parameters;
      }
      if (done < total) {
        // Stopped: the rows done, with the library's metrics of them.
        r.status = 'partial';
        r.rows = r.rows.slice(0, done);
        r.metrics = steps.find((p) => p.rows === done)?.metrics ?? null;
        r.timing = { ...r.timing, wall_seconds: (performance.now() - started) / 1000 };
      }
      lastResult = { file: r, from: source.debias };
      return clone(r);
    },

    async cancelRun() {
      if (run) run.cancelled = true;
    },

    async saveResult(path) {
      await latency();
      failIf('save_result', 'Readout is not allowed to open that file or folder.', `${path ?? settings.benchDir}: Permission denied (os error 13)`);
      if (!lastResult) throw fail('There is no result to save yet: run an evaluation first.');
      const file = path ?? `${settings.benchDir}/${fileName(lastResult.file)}`;
      results.set(file, clone(lastResult));
      return file;
    },

    async listResults(dir) {
      await latency();
      const folder = dir ?? settings.benchDir;
      failIf('list_results', `${nameOf(folder)} is not there: it may have been moved, renamed or deleted.`, `${folder}: No such file or directory (os error 2)`);
      return [...results.entries()]
        .filter(([f]) => f.startsWith(`${folder}/`) || !dir)
        .map(([f, r]) => entryOf(f, r.file));
    },

    async loadResult(file) {
      await latency();
      failIf('load_result', `Line 1 of ${nameOf(file)}, field “metrics”: invalid type: string, expected an object.`, `${file}:1: field \`metrics\`: invalid type: string, expected an object`);
      return clone(findResult(file).file);
    },

    async compareResults(a, b) {
      await latency(300);
      failIf('compare_results', 'These two runs scored different eval sets: compare runs of one eval set.', `${a} and ${b} scored different eval sets`);
      const ra = findResult(a);
      const rb = findResult(b);
      if (ra.file.eval_set.sha256 !== rb.file.eval_set.sha256) {
        throw fail('These two runs scored different eval sets: compare runs of one eval set.', `${a} and ${b} scored different eval sets`);
      }
      const whole = (h: Held) => h.file.status === 'complete';
      const c = FIXTURES.comparisons.find((x) => x.a === ra.from && x.b === rb.from);
      if (!c || !whole(ra) || !whole(rb)) {
        throw 'the browser mock compares complete runs only (its comparisons were made by the library ahead of time)';
      }
      return clone(c.comparison);
    },

    async listModels() {
      await latency();
      failIf('list_models', 'Line 3 of manifest, field “sha256”: is not 64 hex digits.', 'models/manifest:3: field `sha256`: is not 64 hex digits');
      return clone(models);
    },

    async addModel(path) {
      await latency(400);
      failIf(
        'add_model',
        `The model file ${nameOf(path)} is incomplete or damaged: download it again.`,
        `${path}: not a readable GGUF file (tensor \`blk.0.attn_q.weight\` ends past the end of the file). The file is truncated or corrupt: download it again (for the default model: \`models/fetch\`).`,
      );
      const found = FIXTURES.models.find((m) => m.path === path);
      const m = found ? clone(found) : { ...clone(QWEN3_4B), path, name: path.split('/').pop() ?? path };
      if (!models.some((x) => x.path === m.path)) models.push(m);
      return clone(m);
    },

    async setChatTemplate(path, template) {
      await latency(60);
      const m = models.find((x) => x.path === path);
      if (!m) throw missing(path);
      if (template && !FIXTURES.chatTemplateNames.includes(template) && !template.includes('/')) {
        throw fail(
          `“${template}” is not a chat template Readout knows, nor a file it can read.`,
          `${path}: \`${template}\` is neither a chat template Readout knows nor a readable file (No such file or directory (os error 2)). Name the chat template to read it with: --chat-template NAME|FILE, where NAME is one of ${FIXTURES.chatTemplateNames.join(', ')} (llama.cpp's names), or FILE a Jinja template`,
        );
      }
      m.chat_template = template || null;
      const chatTemplates = { ...settings.chatTemplates };
      if (template) chatTemplates[path] = template;
      else delete chatTemplates[path];
      settings = { ...settings, chatTemplates };
      return clone(m);
    },

    async chatTemplateNames() {
      await latency(20);
      return [...FIXTURES.chatTemplateNames];
    },

    async catalogue() {
      await latency(40);
      failIf('catalogue', 'The catalogue could not be read.');
      return clone(FIXTURES.catalogue);
    },

    async pullModel(spec, onProgress) {
      await latency(200);
      failIf(
        'pull_model',
        'The download failed: the hub or the network did not answer as expected.',
        `hf:${spec}: cannot reach https://huggingface.co (Dns Failed: resolve dns name 'huggingface.co:443'); check the network, or use --offline`,
        { kind: 'retry' },
      );
      if (!/^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+(@[A-Za-z0-9._/-]+)?(:.+)?$/.test(spec)) {
        throw fail(
          'That is not the name of a model on the hub: write the organisation and the repository, as in the address of its page.',
          `\`${spec}\` is not a hub model: the repository must be ORG/NAME (letters, digits, \`-\`, \`_\`, \`.\`); write ORG/REPO, ORG/REPO@REVISION, ORG/REPO:FILE or ORG/REPO@REVISION:FILE (e.g. Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf)`,
        );
      }
      const item = FIXTURES.catalogue.find((e) => e.spec === spec || e.spec.split(':')[0] === spec);
      if (!item) {
        throw fail(
          'The hub has no model of that name: check the name, as in the address of its page.',
          `repository ${spec.split(/[@:]/)[0]} is not on the hub (https://huggingface.co): check its name (ORG/REPO, as in the address of its page); a private repository needs HF_TOKEN (the browser mock has the catalogue's repositories only)`,
        );
      }
      const file = item.spec.split(':')[1];
      const total = item.size_bytes;
      const me = { cancelled: false };
      pull = me;
      const ticks = SLOW ? 120 : 20;
      let done = kept.get(item.spec) ?? 0;
      for (let i = 0; i < ticks && done < total; i++) {
        if (me.cancelled) {
          kept.set(item.spec, done);
          const part = `/home/me/.cache/huggingface/hub/models--${item.spec.split(':')[0].replace('/', '--')}/blobs/${file}.part`;
          throw fail(
            `The download was stopped after ${megabytes(done, total)}; what arrived is kept, and it goes on from there.`,
            `hf:${item.spec}: the download of ${file} was stopped after ${done} of ${total} bytes; they are kept in ${part}, and getting hf:${item.spec} again resumes from there`,
            { kind: 'resume_download' },
          );
        }
        done = Math.min(total, done + Math.ceil(total / ticks));
        onProgress({ file, done, total });
        await sleep(100);
      }
      kept.delete(item.spec);
      // The default model is the fixture with its figures; another is named as the catalogue names it.
      const m: ModelEntry = item.default
        ? clone(SMOLLM2)
        : {
            ...clone(QWEN3_4B),
            name: item.name,
            path: cachePath(item.spec),
            quantisation: item.quantisation,
            size_bytes: item.size_bytes,
            licence: item.licence,
            good_for: item.good_for,
            catalogue: item.spec,
          };
      if (!models.some((x) => x.path === m.path)) models.push(m);
      if (!models.some((x) => x.path === settings.defaultModel)) settings = { ...settings, defaultModel: m.path };
      return clone(m);
    },

    async cancelPull() {
      if (pull) pull.cancelled = true;
    },

    async deriveModel(req) {
      await latency(60);
      failIf('derive_model', 'That file or folder is not there: it may have been moved, renamed or deleted.', `${req.model}: No such file or directory (os error 2)`);
      const pruneTo = req.pruneTo ?? 4;
      const forModel = FIXTURES.derivations.filter((d) => d.model === req.model);
      if (forModel.length === 0) throw `${req.model}: the browser mock has no DERIVED figures for this model`;
      const d = forModel.find((x) => x.pruneTo === pruneTo);
      if (!d || (req.promptTokens !== undefined && req.promptTokens !== d.derivation.trim.prompt_tokens)) {
        const letters = forModel.map((x) => x.pruneTo);
        throw `the browser mock has DERIVED figures for ${Math.min(...letters)} to ${Math.max(...letters)} answer letters and ${d?.derivation.trim.prompt_tokens ?? 600}-token prompts only (made by the library ahead of time)`;
      }
      return clone(d.derivation);
    },

    async getSettings() {
      await latency(50);
      failIf('get_settings', 'Line 4 of settings.json, field “threads”: invalid type: string "two", expected u32.', 'settings.json:4: field `threads`: invalid type: string "two", expected u32');
      return { ...settings };
    },

    async setSettings(s) {
      await latency(50);
      failIf('set_settings', `The ${s.device.toUpperCase()} device is not available on this computer: choose Automatic or CPU in the settings.`, `device \`${s.device}\` is not available: this build has no CUDA support`);
      if (s.device === 'cuda' || s.device === 'metal') {
        throw fail(
          `The ${s.device.toUpperCase()} device is not available on this computer: choose Automatic or CPU in the settings.`,
          `device \`${s.device}\` is not available: this build of Readout has no ${s.device.toUpperCase()} support`,
        );
      }
      const threads = s.threads > 0 ? s.threads : 2;
      settings = { ...s, deviceInUse: `cpu (${threads} thread${threads === 1 ? '' : 's'})` };
      return { ...settings };
    },

    async pickFile(kind: PickKind, defaultName?: string) {
      await latency(50);
      const fixed: Record<PickKind, string> = {
        rubric: 'examples/support-ticket.rubric.json',
        rubric_save: `/home/me/rubrics/${defaultName ?? 'rubric.json'}`,
        evalset: '/home/me/evalsets/bad.jsonl',
        result_save: `/home/me/results/${defaultName ?? 'result.json'}`,
        results_dir: 'bench/results',
        model_gguf: QWEN3_4B.path,
        model_dir: QWEN3_06B.path,
        chat_template: '/home/me/templates/base.jinja',
        export_csv: `/home/me/${defaultName ?? 'answers.csv'}`,
        export_json: `/home/me/${defaultName ?? 'answers.json'}`,
        calibration: CALIBRATION_PATH,
        answers: '/home/me/tickets.jsonl',
        texts: 'examples/support-tickets.csv',
      };
      return fixed[kind];
    },

    // The columns are the library's (a fixture the shell's tests write); the rows a stand-in.
    async answersSummary(results) {
      await latency(20);
      return summaryOf(results);
    },

    async summaryCsv(results) {
      await latency(20);
      const lines = ['question,type,answer,texts,share (%)'];
      for (const q of summaryOf(results)) {
        const rows: [string, number][] = q.options.map((o) => [q.type === 'score' ? `${o.id}: ${o.description}` : o.id, o.count]);
        if (q.no_answer > 0) rows.push(['no answer', q.no_answer]);
        for (const [answer, n] of rows) {
          lines.push([q.criterion.replace(/_/g, ' '), q.type === 'noul' ? 'yes/no' : q.type, answer, n, Math.round((100 * n) / Math.max(1, q.texts))].map(sheetField).join(','));
        }
      }
      return lines.join('\n') + '\n';
    },

    async answersSheet(texts, results) {
      await latency(20);
      // The library's `to_sheet_csv`: a row per text, the answers in words, a flag column only
      // for a question with a close or order-unstable answer.
      const flagWords = (c: CriterionResult) => [c.close ? 'close call' : '', c.order_unstable === true ? 'changed when reordered' : ''].filter(Boolean).join('; ');
      const first = results[0];
      if (!first) return 'number,id,text\n';
      const flagCol = first.criteria.map((_, k) => results.some((r) => r.criteria[k] && flagWords(r.criteria[k]) !== ''));
      const header = ['number', 'id', 'text'];
      first.criteria.forEach((c, k) => {
        const name = c.criterion.replace(/_/g, ' ');
        header.push(name, `${name} probability (%)`, ...(flagCol[k] ? [`${name} flag`] : []));
      });
      const lines = [header.map(sheetField).join(',')];
      for (const r of results) {
        const t = texts[r.index];
        const row: unknown[] = [r.index + 1, r.id ?? t?.id, t?.text];
        r.criteria.forEach((c, k) => {
          const chosen = c.options.find((o) => o.id === c.chosen);
          const answer =
            c.chosen === null
              ? c.abstained === 'letter_mass'
                ? 'no answer (none fits)'
                : 'no answer (unsure)'
              : c.type === 'score'
                ? `${c.chosen}: ${chosen?.description ?? ''}`
                : c.chosen;
          row.push(answer, Math.round(100 * c.probability), ...(flagCol[k] ? [flagWords(c)] : []));
        });
        lines.push(row.map(sheetField).join(','));
      }
      return lines.join('\n') + '\n';
    },

    async judgeRecord(model) {
      await latency(40);
      failIf('judge_record', 'Readout is not allowed to open results.', 'bench/results: Permission denied (os error 13)');
      const file = (model ?? settings.defaultModel).split('/').pop() ?? '';
      // The newest complete run of the model, a readout run before a generate one.
      const runs = [...results.entries()]
        .filter(([, h]) => h.file.status === 'complete' && h.file.metrics && h.file.model.file === file)
        .sort(([, a], [, b]) => Number(b.file.config.mode === 'readout') - Number(a.file.config.mode === 'readout') || b.file.created.localeCompare(a.file.created));
      const hit = runs[0];
      if (!hit) return null;
      const [path, { file: r }] = hit;
      return {
        model: r.model.name,
        accuracy: r.metrics?.mean_family_balanced_accuracy ?? 0,
        chance: chanceOf(r),
        eval_set: r.eval_set.name,
        rows: r.rows.length,
        debias: r.config.debias,
        created: r.created,
        file: path,
      };
    },

    async answersCsv(texts, results) {
      const field = (v: unknown): string => {
        const s = v === null || v === undefined ? '' : String(v);
        return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
      };
      const lines = [FIXTURES.answersCsvHeader.join(',')];
      for (const r of results) {
        const t = texts[r.index];
        for (const c of r.criteria) {
          const options = c.options.map((o) => `${o.id}=${o.probability.toFixed(4)}`).join('; ');
          const row = [r.index + 1, r.index, r.id ?? t?.id, t?.text, c.criterion, c.type, c.chosen, c.probability, c.margin, c.close,
            c.order_unstable, c.expected_level, c.letter_mass, c.abstained, options];
          lines.push(row.map(field).join(','));
        }
      }
      return lines.join('\n') + '\n';
    },

    async reviewStart(rubric, texts, results) {
      await latency(200);
      failIf('review_start', 'Readout is not allowed to open reviews.', 'reviews: Permission denied (os error 13)');
      checkRubric(rubric, 'rubric');
      if (texts.length !== results.length) throw `${texts.length} texts but ${results.length} answers; review needs the answer of every text`;
      const same = areReviewTexts(texts) && JSON.stringify(results) === JSON.stringify(REVIEW.results);
      if (!same) {
        throw 'the browser mock reviews the default model’s answers to examples/support-tickets.csv only (one option order, no other option): its queue and figures were made by the library ahead of time';
      }
      const n = reviews.length;
      const dir = n === 0 ? REVIEW.view.dir : `${REVIEW.view.dir}-${n + 1}`;
      const r: MockOpenReview = {
        dir,
        answersFile: `${dir}/answers.jsonl`,
        labelsFile: `${dir}/answers.labels.jsonl`,
        created: REVIEW.view.dir.split('/').pop()!.slice(0, 20).replace(/T(\d\d)-(\d\d)-(\d\d)Z/, 'T$1:$2:$3Z'),
        labels: new Map(),
      };
      reviews.push(r);
      review = r;
      return viewOf(r);
    },

    async reviewList(): Promise<ReviewEntry[]> {
      await latency(40);
      return [...reviews].reverse().map((r) => ({ dir: r.dir, name: REVIEW.view.name, created: r.created, texts: REVIEW.texts.length, labelled: counted(r).labelled }));
    },

    async reviewOpen(dir) {
      await latency(120);
      const r = reviews.find((x) => x.dir === dir);
      if (!r) throw fail("That folder is not one of the app's reviews: open an answers file with Open answers file… instead.", `${dir}: not one of the app's review folders`);
      review = r;
      return viewOf(r);
    },

    async reviewOpenAnswers(answers, texts, rubric) {
      await latency(200);
      if (answers.includes('bad')) {
        throw fail(`Line 2 of ${nameOf(answers)}, field “(line)”, cannot be read.`, `${answers}:2: field \`(line)\`: not a decision \`readout score --out\` writes (EOF while parsing an object at line 1 column 24)`);
      }
      if (!texts.endsWith('support-tickets.csv') || !rubric.endsWith('support-ticket.rubric.json')) {
        throw `the browser mock opens answers with examples/support-tickets.csv and examples/support-ticket.rubric.json only`;
      }
      const dir = answers.replace(/\/[^/]*$/, '');
      const stem = answers.replace(/^.*\//, '').replace(/\.[^.]*$/, '');
      let r = beside.find((x) => x.answersFile === answers);
      if (!r) {
        r = { dir, answersFile: answers, labelsFile: `${dir}/${stem}.labels.jsonl`, created: '', labels: new Map() };
        beside.push(r);
      }
      review = r;
      return viewOf(r);
    },

    async reviewLabel(index, answers, skipped) {
      await latency(30);
      failIf('review_label', 'answers.labels.jsonl could not be read or written.', 'answers.labels.jsonl: No space left on device (os error 28)');
      const r = openReview();
      const criteria = REVIEW.view.criteria;
      if (index >= REVIEW.texts.length) throw fail(`There is no text ${index + 1} here: the review has ${REVIEW.texts.length} texts.`);
      if (answers.length !== criteria.length) {
        throw `${answers.length} answers given for ${criteria.length} criteria; give one per criterion (none for one not answered)`;
      }
      answers.forEach((a, k) => {
        if (a !== null && a >= criteria[k].options.length) throw `criterion \`${criteria[k].name}\` has ${criteria[k].options.length} options; ${a} is not one`;
      });
      r.labels.set(index, { labels: [...answers], skipped });
      return update(r, index);
    },

    async reviewUndo(index) {
      await latency(30);
      const r = openReview();
      r.labels.delete(index);
      return update(r, index);
    },

    async reviewReport(targetHalfWidth) {
      await latency(150);
      failIf('review_report', 'The labels name text 25 but the answers hold 20 texts; use the answers file the labels were given on.');
      const r = openReview();
      if (!(targetHalfWidth > 0 && targetHalfWidth < 1)) {
        throw fail(`The precision wanted is a share between 0 and 1 (0.05 for ± 5 %), not ${targetHalfWidth}.`);
      }
      const step = stepOf(r);
      if (!step || Math.abs(targetHalfWidth - REVIEW.targetHalfWidth) > 1e-9) throw noStep;
      return clone(step.report);
    },

    async reviewFitState(): Promise<FitState> {
      await latency(80);
      failIf('review_fit_state', 'Readout is not allowed to open answers.labels.jsonl.', 'answers.labels.jsonl: Permission denied (os error 13)');
      const r = openReview();
      const step = stepOf(r);
      if (!step) throw noStep;
      return r.fitted ? { readiness: clone(step.readiness), fitted: clone(r.fitted) } : { readiness: clone(step.readiness) };
    },

    async calibrateResult(file): Promise<Fitted> {
      await latency(300);
      failIf('calibrate_result', 'Something went wrong inside the app.', 'mock failure', { kind: 'retry' });
      const held = results.get(file);
      if (!held) throw fail(`${nameOf(file)} is not there: it may have been moved, renamed or deleted.`, `${file}: No such file or directory (os error 2)`);
      const r = held.file;
      // The shell's refusals (src-tauri/src/commands/calibrate.rs).
      if (r.config.mode !== 'readout') {
        throw fail('This run had the model write its answers, so it has no probabilities to calibrate. Run the eval set again reading the answer letters, then calibrate that run.');
      }
      if (r.config.calibration) throw fail('This run already used a temperature. Run the eval set again without one, then calibrate that run.');
      if (r.status === 'partial') throw fail('This run was stopped before every row was scored. Resume it, then calibrate it.');
      const cal = cyclicCalibrationFile as CalibrationFile;
      if (r.config.debias !== cal.fitted_on.debias || r.config.shots !== cal.fitted_on.shots || r.model.file !== cyclicFixture.model.file) {
        throw fail('The browser mock has the library’s fit of the default model’s 3-shot run with every rotation only.');
      }
      const out = `${file.replace(/\.json$/, '')}.calibration.json`;
      const f: Fitted = { file: out, result_file: file, calibration: clone(cal), model_file: r.model.file, at_range_edge: false };
      f.calibration.fitted_on.file = nameOf(file);
      CALIBRATIONS.set(out, { file: nameOf(out), debias: cal.fitted_on.debias, temperature: cal.temperature });
      return clone(f);
    },

    async reviewFit({ model, debias }, onProgress): Promise<Fitted> {
      await latency(200);
      failIf('review_fit', 'The model failed while working out an answer.', 'tensor computation failed: mock failure', { kind: 'retry' });
      const r = openReview();
      const step = stepOf(r);
      if (!step) throw noStep;
      if (!step.readiness.ready) throw step.refusal ?? noStep;
      if (needsTemplate(model)) throw noTemplate(model ?? settings.defaultModel);
      const fitted = REVIEW.fitted;
      if ((model && model !== SMOLLM2.path) || debias !== fitted.calibration.fitted_on.debias) {
        throw fail(`The browser mock has the library’s fit of the default model with one option order (${fitted.calibration.fitted_on.debias}) only.`, fitted.model_file);
      }
      // The judge reads every labelled answer, as a run reports its rows.
      const me = { cancelled: false };
      run = me;
      const total = fitted.calibration.fitted_on.rows;
      for (let done = 6; done <= total; done += 6) {
        await latency(60);
        onProgress({ done, total, elapsed_seconds: done / 20 });
        if (me.cancelled) throw fail('Stopped before the judge had read every labelled answer: nothing was fitted.');
      }
      const f = clone(fitted);
      const dir = r.labelsFile.replace(/\/[^/]*$/, '');
      const stem = r.labelsFile.replace(/^.*\//, '').replace(/\.jsonl$/, '');
      f.file = `${dir}/${stem}.calibration.json`;
      f.result_file = `${dir}/${stem}.result.json`;
      r.fitted = f;
      CALIBRATIONS.set(f.file, { file: `${stem}.calibration.json`, debias: f.calibration.fitted_on.debias, temperature: f.calibration.temperature });
      return clone(f);
    },

    async listLabelsCurves(dir): Promise<LabelsCurveEntry[]> {
      await latency();
      failIf('list_labels_curves', 'Readout is not allowed to open that file or folder.', `${dir ?? settings.benchDir}: Permission denied (os error 13)`);
      if (EMPTY) return [];
      const c = LABELS_CURVE;
      return [{ file: LABELS_CURVE_PATH, eval_set: c.source.eval_set, model: c.source.model, option: c.curve.option, texts: c.curve.texts, created: c.created }];
    },

    async loadLabelsCurve(file) {
      await latency();
      if (file !== LABELS_CURVE_PATH) throw missing(file);
      return clone(LABELS_CURVE);
    },

    async listScored(dir): Promise<ScoredEntry[]> {
      await latency();
      failIf('list_scored', 'Readout is not allowed to open that file or folder.', `${dir ?? settings.benchDir}: Permission denied (os error 13)`);
      return SCORED.map(({ file, scored: f }) => ({
        file,
        created: f.created,
        rubric: (f.rubric as { name?: string }).name ?? '',
        model: f.model.name,
        debias: f.config.debias,
        texts: f.texts.length,
        answered: f.results.length,
        status: f.status,
      }));
    },

    async rowTexts(evalSet) {
      await latency();
      // Every run the mock makes read the bundled eval set; `?fail=row_texts` as if it were gone.
      if (FAIL.has('row_texts') || evalSet.sha256 !== RUNS[0].file.eval_set.sha256) return { texts: {}, missing: 'The texts are not shown: the eval set “authored144” this run read is not on this computer as it was.' };
      return clone(ROW_TEXTS);
    },

    async loadScored(file) {
      await latency();
      const f = SCORED.find((s) => s.file === file);
      if (!f) throw missing(file);
      return clone(f.scored);
    },

    // ── The Score page's library: kept in the browser's localStorage (the app keeps them in its
    // data folder), so that a reload stands in for a restart.
    async rubricLibraryList() {
      await latency(30);
      return stored<{ path: string; rubric: Rubric }[]>(KEYS.rubrics, [])
        .map(({ path, rubric }) => ({ name: rubric.name, path, criteria: Object.keys(rubric.questions).length }))
        .sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
    },

    async rubricLibrarySave(rubric) {
      await latency(60);
      const stem = rubric.name.trim().replace(/[^\p{L}\p{N}._-]/gu, '-').replace(/^[-.]+|[-.]+$/g, '') || 'rubric';
      const path = `/home/me/.local/share/dev.readout.desktop/rubrics/${stem}.rubric.json`;
      checkRubric(rubric, path);
      const kept = stored<{ path: string; rubric: Rubric }[]>(KEYS.rubrics, []).filter((r) => r.path !== path);
      store(KEYS.rubrics, [...kept, { path, rubric: clone(rubric) }]);
      return { name: rubric.name, path, criteria: Object.keys(rubric.questions).length };
    },

    async rubricLibraryDelete(path) {
      await latency(30);
      const kept = stored<{ path: string; rubric: Rubric }[]>(KEYS.rubrics, []);
      if (!kept.some((r) => r.path === path)) throw { message: 'Only a rubric of My rubrics can be deleted here.', fix: null, details: path };
      store(KEYS.rubrics, kept.filter((r) => r.path !== path));
    },

    async recentList() {
      await latency(20);
      return stored<Recent>(KEYS.recent, { texts: [], rubrics: [], exports: [] });
    },

    async recentAdd(kind, path) {
      await latency(20);
      const recent = stored<Recent>(KEYS.recent, { texts: [], rubrics: [], exports: [] });
      recent[kind] = [path, ...recent[kind].filter((p) => p !== path)].slice(0, 5);
      store(KEYS.recent, recent);
      return recent;
    },

    async readTextsFile(path) {
      await latency(60);
      const file = MOCK_FILES[path];
      if (file === undefined) {
        const name = path.split('/').pop() ?? path;
        throw { message: `${name} is not there: it may have been moved, renamed or deleted.`, fix: null, details: `${path}: No such file or directory (os error 2)` };
      }
      return file;
    },

    async sessionLoad() {
      await latency(20);
      return stored<Session | null>(KEYS.session, null);
    },

    async sessionSave(session) {
      store(KEYS.session, session);
    },

    async exportText(kind, defaultName, contents) {
      // In a browser: a download.
      const type = kind === 'export_csv' ? 'text/csv' : 'application/json';
      const url = URL.createObjectURL(new Blob([contents], { type }));
      const a = document.createElement('a');
      a.href = url;
      a.download = defaultName;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      return defaultName;
    },
  };
}
