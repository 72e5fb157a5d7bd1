// A stand-in backend for a plain browser (tests, development). It answers every command of
// the IPC contract with data of the real shapes: the two bundled result files are real
// `readout run` outputs; scores of texts are made up from word overlap (deterministic).
//
// Flags (URL query):
//   ?slow=1          every call takes 3 s longer and a run takes ~10 s (to see "running" states)
//   ?empty=1         no result files, no models (to see "empty" states)
//   ?fail=a,b        the named commands fail (e.g. fail=list_results,list_models,add_model)
//   ?badset=1        the eval-set folder also holds a set that cannot be read (line 2, `options`)
// and inputs that fail the way the real backend does:
//   a text containing FAIL           → score_texts fails (prompt longer than the context)
//   an eval set whose path ends bad.jsonl → run_eval refuses the set (line 2, field `options`)
//   a rubric path containing "bad"   → load_rubric fails (field `questions.topic.criteria`)
import type { Backend, ScoreRequest } from './api';
import cyclicFixture from './fixtures/authored144_smollm2-135m-instruct.q4_1_readout_3shot_cyclic.json';
import noneFixture from './fixtures/authored144_smollm2-135m-instruct.q4_1_readout_3shot_none.json';
import exampleRubric from './fixtures/support-ticket.rubric.json';
import { compare, summarize } from './mockMetrics';
import type {
  CriterionResult,
  EvalSetInfo,
  ModelInfo,
  OptionResult,
  PickKind,
  ResultFile,
  ResultSummary,
  Rubric,
  ScoreProgress,
  Settings,
  TextResult,
} from './types';

const query = new URLSearchParams(typeof location !== 'undefined' ? location.search : '');
const SLOW = query.get('slow') === '1';
const EMPTY = query.get('empty') === '1';
const FAIL = new Set((query.get('fail') ?? '').split(',').filter(Boolean));
const BADSET = query.get('badset') === '1';

/** The library's message for the bad set (as `EvalSet::load` words it). */
const badSetMessage = (path: string) =>
  `${path}:2: field \`options\`: has 0 option(s); a criterion needs at least 2. Nothing was scored: fix that line, or skip bad lines (\`--skip-bad\` in the CLI, *Skip bad lines* in the app) to score the rest and record them`;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const latency = (ms = 120) => sleep(ms + (SLOW ? 3000 : 0));
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

function failIf(command: string, message: string): void {
  if (FAIL.has(command)) throw message;
}

const CYCLIC = cyclicFixture as unknown as ResultFile;
const NONE = noneFixture as unknown as ResultFile;

// ---- models ----

interface Shape {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  qkNorm: boolean;
}

/** Parameter count of a tied-embedding llama/qwen3 decoder from its shape. */
function parameters(s: Shape): number {
  const attn = s.hidden * s.heads * s.headDim * 2 + s.hidden * s.kvHeads * s.headDim * 2;
  const mlp = 3 * s.hidden * s.ffn;
  const norms = 2 * s.hidden + (s.qkNorm ? 2 * s.headDim : 0);
  return s.vocab * s.hidden + s.layers * (attn + mlp + norms) + s.hidden;
}

function model(name: string, path: string, arch: string, quant: string, s: Shape, context: number): ModelInfo {
  return {
    name,
    path,
    architecture: arch,
    quantisation: quant,
    parameters: parameters(s),
    config: {
      vocab_size: s.vocab,
      hidden_size: s.hidden,
      num_hidden_layers: s.layers,
      num_attention_heads: s.heads,
      num_key_value_heads: s.kvHeads,
      head_dim: s.headDim,
      intermediate_size: s.ffn,
      max_position_embeddings: context,
      tie_word_embeddings: true,
    },
  };
}

const SMOLLM2 = model(
  'SmolLM2-135M-Instruct',
  'models/SmolLM2-135M-Instruct.Q4_1.gguf',
  'llama',
  'Q4_1',
  { vocab: 49152, hidden: 576, layers: 30, heads: 9, kvHeads: 3, headDim: 64, ffn: 1536, qkNorm: false },
  8192,
);
const QWEN3_06B = model(
  'Qwen3-0.6B',
  '/home/me/models/Qwen3-0.6B',
  'qwen3',
  'BF16',
  { vocab: 151936, hidden: 1024, layers: 28, heads: 16, kvHeads: 8, headDim: 128, ffn: 3072, qkNorm: true },
  40960,
);
const QWEN3_17B = model(
  'Qwen3-1.7B Q8_0',
  '/home/me/models/Qwen3-1.7B-Q8_0.gguf',
  'qwen3',
  'Q8_0',
  { vocab: 151936, hidden: 2048, layers: 28, heads: 16, kvHeads: 8, headDim: 128, ffn: 6144, qkNorm: true },
  40960,
);

// ---- scoring texts ----

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

function checkRubric(rubric: Rubric, file: string): void {
  const names = Object.keys(rubric.questions ?? {});
  if (!rubric.name?.trim()) throw `${file}:1: field \`name\`: must not be empty`;
  if (names.length === 0) throw `${file}:1: field \`questions\`: has no questions; a rubric needs at least 1`;
  for (const name of names) {
    const q = rubric.questions[name];
    if (!q.instructions?.trim()) throw `${file}:1: field \`questions.${name}.instructions\`: must not be empty`;
    const opts = optionsOf(q);
    if (q.type !== 'noul' && opts.length < 2) {
      throw `${file}:1: field \`questions.${name}.criteria\`: has ${opts.length} option(s); a criterion needs at least 2`;
    }
    if (opts.length > 26) {
      throw `${file}:1: field \`questions.${name}.criteria\`: has ${opts.length} options; at most 26 fit the letters A-Z`;
    }
    for (const o of opts) {
      if (!o.description.trim()) {
        throw `${file}:1: field \`questions.${name}.criteria\`: option \`${o.id}\` has an empty description`;
      }
    }
  }
}

function scoreOne(text: string, name: string, q: Rubric['questions'][string], cyclic: boolean): CriterionResult {
  const opts = optionsOf(q);
  const tw = words(text);
  const logits = opts.map((o, i) => {
    let overlap = 0;
    for (const w of words(o.description)) if (tw.has(w) || tw.has(w.replace(/s$/, ''))) overlap += 1;
    const noise = (hash(`${text}|${name}|${o.id}`) % 1000) / 1000;
    const position = cyclic ? 0 : 0.35 * (opts.length - i) / opts.length; // the small model's taste for "A"
    return 1.6 * overlap + 0.9 * noise + position;
  });
  if (q.type === 'noul') {
    const hints = ['refund', 'money', 'back', 'chargeback', 'credit', 'charged', 'twice'];
    const hit = hints.some((h) => tw.has(h));
    logits[0] += hit ? 1.4 : -0.4;
  }
  const m = Math.max(...logits);
  const exps = logits.map((l) => Math.exp(l - m));
  const z = exps.reduce((a, b) => a + b, 0);
  const options: OptionResult[] = opts.map((o, i) => ({ ...o, probability: exps[i] / z }));
  const sorted = [...options].sort((a, b) => b.probability - a.probability);
  const margin = sorted[0].probability - (sorted[1]?.probability ?? 0);
  // Keys in the order the Rust struct serialises them.
  const result = {
    criterion: name,
    type: q.type,
    options,
    chosen: sorted[0].id,
    probability: sorted[0].probability,
  } as CriterionResult;
  if (q.type === 'score') result.expected_level = options.reduce((s, o, i) => s + i * o.probability, 0);
  result.margin = margin;
  result.close = margin < 0.1;
  result.order_unstable = cyclic ? margin < 0.12 || hash(`${text}|${name}`) % 5 === 0 : null;
  result.letter_mass = 0.62 + (hash(`${name}|${text}|mass`) % 350) / 1000;
  return result;
}

// ---- the mock backend ----

export function createMockBackend(): Backend {
  let settings: Settings = {
    benchDir: 'bench/results',
    defaultModel: SMOLLM2.path,
    device: 'auto',
    threads: 0,
    deviceInUse: 'cpu (2 threads)',
    models: [],
  };
  const models: ModelInfo[] = EMPTY ? [] : [SMOLLM2, QWEN3_06B];
  const results = new Map<string, ResultFile>();
  if (!EMPTY) {
    for (const r of [CYCLIC, NONE]) results.set(`bench/results/${fileName(r)}`, r);
  }
  let run: { cancelled: boolean } | null = null;
  /** Rows done by stopped runs, by their options: what a partial file in the results folder holds. */
  const partials = new Map<string, number>();
  let lastResult: ResultFile | null = null;

  function fileName(r: ResultFile): string {
    const model = r.model.file.replace(/\.gguf$/i, '').toLowerCase();
    const base = `${r.eval_set.name}_${model}_${r.config.mode}_${r.config.shots}shot_${r.config.debias}`;
    return `${base}${r.status === 'partial' ? '_partial' : ''}.json`;
  }

  function summaryOf(file: string, r: ResultFile): ResultSummary {
    return {
      file,
      mode: r.config.mode,
      shots: r.config.shots,
      debias: r.config.debias,
      mean_family_balanced_accuracy: r.metrics?.mean_family_balanced_accuracy ?? null,
      order_unstable: r.metrics?.overall.order_unstable ?? null,
      seconds: r.timing.wall_seconds,
      rows: r.rows.length,
      status: r.status,
    };
  }

  function findResult(file: string): ResultFile {
    const r = results.get(file) ?? [...results.entries()].find(([k]) => k.endsWith(file))?.[1];
    if (!r) throw `${file}: No such file or directory (os error 2)`;
    return r;
  }

  return {
    async scoreTexts(req: ScoreRequest, onProgress: (p: ScoreProgress) => void): Promise<TextResult[]> {
      await latency(300);
      failIf('score_texts', 'tensor computation failed: mock failure');
      checkRubric(req.rubric, 'rubric');
      if (req.texts.length === 0) throw 'texts: nothing to score; paste a text or open a file';
      const cyclic = req.debias === 'cyclic';
      // Checked first, as the shell refuses a text before scoring any.
      req.texts.forEach((t, index) => {
        if (t.text.includes('FAIL')) {
          throw `text ${index + 1}${t.id ? ` (${t.id})` : ''}: prompt has 9312 tokens but the model's context holds 8192; shorten the text`;
        }
        if (!t.text.trim()) throw `text ${index + 1}: field \`text\`: is empty`;
      });
      const me = { cancelled: false };
      run = me;
      const out: TextResult[] = [];
      for (const [index, t] of req.texts.entries()) {
        await latency(150 * (cyclic ? 2 : 1));
        const r: TextResult = { index, criteria: [] };
        if (t.id) r.id = t.id;
        r.criteria = Object.entries(req.rubric.questions).map(([name, q]) => scoreOne(t.text, name, q, cyclic));
        out.push(r);
        onProgress({ done: index + 1, total: req.texts.length });
        if (me.cancelled) break;
      }
      return out;
    },

    async example() {
      await latency();
      return {
        rubric: clone(exampleRubric as Rubric),
        texts: [
          'I was charged twice this month, please refund one of them.',
          'The app crashes every time I open the settings page.',
          'How do I change the email address on my account?',
        ],
      };
    },

    async loadRubric(path) {
      await latency();
      failIf('load_rubric', `${path}: No such file or directory (os error 2)`);
      if (path.includes('bad')) {
        throw `${path}:1: field \`questions.topic.criteria\`: has 1 option(s); a criterion needs at least 2`;
      }
      return clone(exampleRubric as Rubric);
    },

    async saveRubric(path, rubric) {
      await latency();
      failIf('save_rubric', `${path}: Permission denied (os error 13)`);
      checkRubric(rubric, path);
    },

    async listEvalSets(): Promise<EvalSetInfo[]> {
      await latency();
      failIf('list_eval_sets', 'bench/evalsets: No such file or directory (os error 2)');
      const sets: EvalSetInfo[] = [{ name: 'authored144', path: 'bench/evalsets/authored144.jsonl', rows: 144 }];
      if (BADSET) {
        const path = 'bench/evalsets/bad-options.jsonl';
        sets.push({ name: 'bad-options', path, rows: 0, error: { message: badSetMessage(path), line: 2, field: 'options' } });
      }
      return sets;
    },

    async runEval(req, onProgress) {
      await latency(200);
      failIf('run_eval', 'tensor computation failed: mock failure');
      if (run) throw 'a run is already going; wait for it or cancel it';
      const bad = req.evalSet.endsWith('bad.jsonl') || req.evalSet.endsWith('bad-options.jsonl');
      if (bad && !req.skipBad) throw badSetMessage(req.evalSet);
      const fixture = req.debias === 'none' ? NONE : CYCLIC;
      const total = fixture.rows.length;
      const seconds = SLOW ? 10 : 2;
      const steps = 20;
      // Resuming: the rows a stopped run of these options finished are kept (the shell reads
      // them from the partial file it left in the results folder).
      const key = `${req.evalSet}|${req.debias}|${req.shots}|${req.mode}`;
      if (req.resume && !partials.has(key)) throw 'there is no partial run of these options to resume';
      const me = { cancelled: false };
      run = me;
      const started = performance.now();
      let done = req.resume ? (partials.get(key) ?? 0) : 0;
      try {
        onProgress({ done, total, elapsed_seconds: 0 });
        for (let s = 1; s <= steps && !me.cancelled; s++) {
          await sleep((seconds * 1000) / steps);
          if (me.cancelled) break;
          done = Math.max(done, Math.round((total * s) / steps));
          onProgress({ done, total, elapsed_seconds: (performance.now() - started) / 1000 });
        }
      } finally {
        run = null;
      }
      if (me.cancelled) partials.set(key, done);
      else partials.delete(key);
      const r = clone(fixture);
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
      const model = models.find((m) => m.path === req.model);
      if (model) {
        r.model.name = model.name;
        r.model.file = model.path.split('/').pop() ?? model.path;
        r.model.architecture = model.architecture;
        r.model.quantisation = model.quantisation;
        r.model.parameters = model.parameters;
      }
      if (me.cancelled) {
        r.status = 'partial';
        r.rows = r.rows.slice(0, done);
        r.metrics = done > 0 ? summarize(r.rows, r.config.bootstrap_resamples, r.config.bootstrap_seed) : null;
        const wall = (performance.now() - started) / 1000;
        r.timing = {
          ...r.timing,
          wall_seconds: wall,
          rows_per_second: done / wall,
          mean_row_seconds: done ? wall / done : 0,
        };
      }
      lastResult = r;
      return clone(r);
    },

    async cancelRun() {
      if (run) run.cancelled = true;
    },

    async saveResult(path) {
      await latency();
      failIf('save_result', `${path ?? settings.benchDir}: Permission denied (os error 13)`);
      if (!lastResult) throw 'no run to save yet; run an evaluation first';
      const file = path ?? `${settings.benchDir}/${fileName(lastResult)}`;
      results.set(file, clone(lastResult));
      return file;
    },

    async listResults(dir) {
      await latency();
      const folder = dir ?? settings.benchDir;
      failIf('list_results', `${folder}: No such file or directory (os error 2); choose the results folder again`);
      return [...results.entries()]
        .filter(([f]) => f.startsWith(`${folder}/`) || !dir)
        .map(([f, r]) => summaryOf(f, r));
    },

    async loadResult(file) {
      await latency();
      failIf('load_result', `${file}:1: field \`metrics\`: invalid type: string, expected an object`);
      return clone(findResult(file));
    },

    async compareResults(a, b) {
      await latency(300);
      failIf('compare_results', `${b}: a result of another eval set (sha256 differs); compare runs of one eval set`);
      const ra = findResult(a);
      const rb = findResult(b);
      if (ra.eval_set.sha256 !== rb.eval_set.sha256) {
        throw `${b}: a result of another eval set (sha256 differs); compare runs of one eval set`;
      }
      return compare(ra.rows, rb.rows);
    },

    async listModels() {
      await latency();
      failIf('list_models', 'models/manifest:3: field `sha256`: is not 64 hex digits');
      return clone(models);
    },

    async addModel(path) {
      await latency(400);
      failIf(
        'add_model',
        `${path}: not a readable GGUF file (tensor \`blk.0.attn_q.weight\` ends past the end of the file). The file is truncated or corrupt: download it again (for the default model: \`models/fetch\`).`,
      );
      const found = [QWEN3_17B, QWEN3_06B, SMOLLM2].find((m) => m.path === path);
      const m = found ? clone(found) : { ...clone(QWEN3_17B), path, name: path.split('/').pop() ?? path };
      if (!models.some((x) => x.path === m.path)) models.push(m);
      return clone(m);
    },

    async getSettings() {
      await latency(50);
      failIf('get_settings', 'settings.json:4: field `threads`: invalid type: string "two", expected u32');
      return { ...settings };
    },

    async setSettings(s) {
      await latency(50);
      failIf('set_settings', `device \`${s.device}\` is not available: this build has no CUDA support`);
      if (s.device === 'cuda' || s.device === 'metal') {
        throw `device \`${s.device}\` is not available: this build of Readout has no ${s.device.toUpperCase()} support; choose Automatic or CPU`;
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
        model_gguf: QWEN3_17B.path,
        model_dir: QWEN3_06B.path,
        export_csv: `/home/me/${defaultName ?? 'answers.csv'}`,
        export_json: `/home/me/${defaultName ?? 'answers.json'}`,
      };
      return fixed[kind];
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
