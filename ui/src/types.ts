// Types of everything that crosses the IPC boundary. Field names are exactly the JSON the
// Rust side produces (snake_case, as serde writes the library's structs), except Settings,
// which is camelCase both ways (see README.md, "IPC contract").

// The shapes the shell's commands take and give, generated from its Rust types by ts-rs
// (`cargo test` in src-tauri writes ui/src/gen/; CI fails when they are stale). The UI's own
// types below narrow them (string unions, 0 threads for all cores) but are built on them, so a
// field the shell renames or retypes breaks this build instead of the running app.
import type { EvalSetEntry } from './gen/EvalSetEntry';
import type { ModelEntry } from './gen/ModelEntry';
import type { RunRequest as ShellRunRequest } from './gen/RunRequest';
import type { ScoreProgress as ShellScoreProgress } from './gen/ScoreProgress';
import type { SetProblem } from './gen/SetProblem';
import type { SettingsView } from './gen/SettingsView';
import type { TextIn } from './gen/TextIn';

export type QuestionType = 'choice' | 'noul' | 'score';

/** docs/rubric.md: one question of a rubric. */
export interface RubricQuestion {
  type: QuestionType;
  instructions: string;
  /** choice: id → description; noul: optional rule text; score: level descriptions, lowest first. */
  criteria?: Record<string, string> | string | string[] | null;
}

/** docs/rubric.md: a rubric file. Questions are scored in the order written. */
export interface Rubric {
  name: string;
  description?: string;
  questions: Record<string, RubricQuestion>;
}

export type TextInput = TextIn;

export type ScoreDebias = 'none' | 'cyclic';

export interface OptionResult {
  id: string;
  description: string;
  probability: number;
}

/** One criterion of one text, as `readout score --json` prints it. */
export interface CriterionResult {
  criterion: string;
  type: QuestionType;
  options: OptionResult[];
  chosen: string;
  probability: number;
  /** score questions only. */
  expected_level?: number;
  margin: number;
  close: boolean;
  /** null when only one ordering was scored. */
  order_unstable: boolean | null;
  letter_mass?: number;
}

/** One line of `readout score --json`. */
export interface TextResult {
  index: number;
  id?: string;
  criteria: CriterionResult[];
}

export type EvalSetInfo = EvalSetEntry;

/** The library's reason an eval set cannot be run: its message, and the line and field it names. */
export type EvalSetProblem = SetProblem;

export type Mode = 'readout' | 'generate';
export type Debias = 'none' | 'cyclic' | 'permutation' | 'calibrate' | 'pride';

export interface RunRequest extends ShellRunRequest {
  /** Path of the eval set (from list_eval_sets or pick_file). */
  evalSet: string;
  /** Model path; omitted = the default model. */
  model?: string;
  mode: Mode;
  shots: number;
  debias: Debias;
  pruneHead: boolean;
  /** Prompt layout: default (readout-v1) or terse (readout-terse-v1). */
  prompt?: 'default' | 'terse';
  /** Speed levers (on by default; off only to measure them). */
  prefixTree?: boolean;
  batchedSuffixes?: boolean;
  trim?: boolean;
  /** New tokens per forward pass. */
  passTokens?: number;
  /** Score the good lines of a set with bad ones (the result file lists the lines left out). */
  skipBad?: boolean;
  /** Complete the partial file a stopped run of these same options left in the results folder. */
  resume?: boolean;
}

/** Texts scored so far, sent after each one while `score_texts` runs. */
export type ScoreProgress = ShellScoreProgress;

export interface Progress {
  done: number;
  total: number;
  elapsed_seconds: number;
}

// ---- Result file (schema/result.schema.json, version 1) ----

export interface ReliabilityBin {
  lo: number;
  hi: number;
  count: number;
  mean_confidence: number;
  accuracy: number;
}

export interface Confusion {
  labels: string[];
  /** counts[gold][predicted], in the order of labels. */
  counts: number[][];
}

export interface Metrics {
  rows: number;
  accuracy: number;
  balanced_accuracy: number;
  invalid: number;
  order_consistency: number | null;
  order_unstable: number | null;
  ece: number;
  brier: number;
  nll: number;
  reliability: ReliabilityBin[];
  confusion: Confusion;
}

export interface Summary {
  overall: Metrics;
  families: Record<string, Metrics>;
  mean_family_balanced_accuracy: number;
  bootstrap: { level: number; lo: number; hi: number; resamples: number; seed: number };
}

export interface Ordering {
  order: number[];
  letter_probs: number[];
  letter_mass: number | null;
  reply: string | null;
  prompt_sha256: string;
}

export interface ResultRow {
  id: string;
  family: string;
  group_id: string;
  option_ids: string[];
  gold: number;
  gold_id: string;
  shots: string[];
  orderings: Ordering[];
  probs: number[] | null;
  predicted: number | null;
  predicted_id: string | null;
  correct: boolean;
  invalid: boolean;
  order_unstable: boolean | null;
}

export interface ResultFile {
  schema: 'readout.result';
  schema_version: 1;
  status: 'complete' | 'partial';
  created: string;
  program: { name: string; version: string };
  machine: { os: string; arch: string; cpus: number; device: string };
  model: {
    name: string;
    file: string;
    sha256: string;
    architecture: string;
    quantisation: string;
    parameters: number;
  };
  eval_set: {
    name: string;
    path: string;
    sha256: string;
    rows: number;
    limit?: number | null;
    family?: string | null;
    skipped: { line: number; field: string; reason: string }[];
  };
  config: {
    mode: Mode;
    shots: number;
    shot_seed: number;
    debias: Debias;
    prompt_version: string;
    max_new_tokens: number;
    pride_share: number;
    pride_seed: number;
    bootstrap_resamples: number;
    bootstrap_seed: number;
    levers: { prefix_tree: boolean; batched_suffixes: boolean; trim: boolean; prune_head: boolean; matmul: string; pass_tokens?: number };
  };
  shots: { primary: string[]; alternate: string[] };
  debias_state: Record<string, unknown>;
  plan: { prompts: number; prompt_tokens: number; unique_tokens: number; computed_tokens: number };
  metrics: Summary | null;
  timing: { wall_seconds: number; model_load_seconds: number; rows_per_second: number; mean_row_seconds: number };
  rows: ResultRow[];
}

/** One line of the results table (generated from the files). */
export interface ResultSummary {
  file: string;
  mode: Mode;
  shots: number;
  debias: Debias;
  mean_family_balanced_accuracy: number | null;
  /** null: not checked (one ordering). */
  order_unstable: number | null;
  seconds: number;
  rows: number;
  status: 'complete' | 'partial';
}

export interface FamilyDiff {
  rows: number;
  accuracy_a: number;
  accuracy_b: number;
  balanced_accuracy_a: number;
  balanced_accuracy_b: number;
}

/** src/metrics.rs `Comparison`. */
export interface Comparison {
  paired: number;
  only_a_correct: number;
  only_b_correct: number;
  p_value: number;
  accuracy_a: number;
  accuracy_b: number;
  families: Record<string, FamilyDiff>;
  unpaired_a: number;
  unpaired_b: number;
}

export interface ModelConfig {
  vocab_size: number;
  hidden_size: number;
  [key: string]: number | boolean | string | null | undefined;
}

export interface ModelInfo extends Omit<ModelEntry, 'config'> {
  config: ModelConfig;
}

export type Device = 'auto' | 'cpu' | 'cuda' | 'metal';

/** The settings as the page holds them: the shell's, with the device narrowed and 0 threads for
 * all cores (the shell keeps none: api.ts converts both ways). */
export interface Settings extends Omit<SettingsView, 'device' | 'threads' | 'defaultModel' | 'deviceInUse' | 'models'> {
  /** Path of the default model. */
  defaultModel: string;
  device: Device;
  /** 0 = all cores. */
  threads: number;
  /** Read-only, filled by get_settings: the device actually in use, e.g. "cpu (2 threads)". */
  deviceInUse?: string;
  /** Models added through the dialog (kept by the shell). */
  models: string[];
}

/** What a file dialog is for; the shell picks filters and open/save/folder from it. */
export type PickKind =
  | 'rubric' // open *.json
  | 'rubric_save' // save *.json
  | 'evalset' // open *.jsonl
  | 'result_save' // save *.json
  | 'results_dir' // choose a folder
  | 'model_gguf' // open *.gguf
  | 'model_dir' // choose a folder (Hugging Face layout)
  | 'export_csv' // save *.csv
  | 'export_json'; // save *.json
