// Types of everything that crosses the IPC boundary. The shapes are generated from the Rust
// types by ts-rs (`cargo test` in src-tauri writes ui/src/gen/; CI fails when they are stale):
// the shell's own arguments and answers and the library's values it hands over (the result file,
// score results, metrics, comparisons, DERIVED figures), so a field renamed or retyped in Rust
// breaks this build instead of the running app. Field names are the JSON the shell produces
// (snake_case, as serde writes the library's structs), except the shell's Settings and requests,
// which are camelCase (see README.md, "IPC contract").
//
// What is written by hand here only narrows them (string unions the shell checks, 0 threads for
// all cores) or describes what the shell takes as free JSON (a rubric file).
import type { Example as ShellExample } from './gen/Example';
import type { QuestionKind } from './gen/QuestionKind';
import type { RunRequest as ShellRunRequest } from './gen/RunRequest';
import type { SettingsView } from './gen/SettingsView';
import type { DebiasMode } from './gen/DebiasMode';
import type { Mode } from './gen/Mode';

export type { Abstained } from './gen/Abstained';
export type { Bin } from './gen/Bin';
export type { Calibration } from './gen/Calibration';
export type { CatalogueItem } from './gen/CatalogueItem';
export type { PullProgress } from './gen/PullProgress';
export type { Comparison } from './gen/Comparison';
export type { Confusion } from './gen/Confusion';
export type { CoverageAtRisk } from './gen/CoverageAtRisk';
export type { CriterionResult } from './gen/CriterionResult';
export type { DebiasMode } from './gen/DebiasMode';
export type { Derivation } from './gen/Derivation';
export type { DeriveRequest } from './gen/DeriveRequest';
export type { EvalSetEntry } from './gen/EvalSetEntry';
export type { EvalSetRecord } from './gen/EvalSetRecord';
export type { FamilyDiff } from './gen/FamilyDiff';
export type { LetterBias } from './gen/LetterBias';
export type { Metrics } from './gen/Metrics';
export type { Mode } from './gen/Mode';
export type { ModelEntry } from './gen/ModelEntry';
export type { OptionResult } from './gen/OptionResult';
export type { PairedBootstrap } from './gen/PairedBootstrap';
export type { PositionBias } from './gen/PositionBias';
export type { Progress } from './gen/Progress';
export type { JuryFile } from './gen/JuryFile';
export type { JuryJudge } from './gen/JuryJudge';
export type { JuryProgress } from './gen/JuryProgress';
export type { PairwiseReport } from './gen/PairwiseReport';
export type { QuestionKind } from './gen/QuestionKind';
export type { Agreement } from './gen/Agreement';
export type { CriterionReport } from './gen/CriterionReport';
export type { Estimate } from './gen/Estimate';
export type { Figure } from './gen/Figure';
export type { OptionRate } from './gen/OptionRate';
export type { Report } from './gen/Report';
export type { ReviewCounts } from './gen/ReviewCounts';
export type { ReviewCriterion } from './gen/ReviewCriterion';
export type { ReviewEntry } from './gen/ReviewEntry';
export type { ReviewItem } from './gen/ReviewItem';
export type { ReviewLabel } from './gen/ReviewLabel';
export type { ReviewUpdate } from './gen/ReviewUpdate';
export type { ReviewView } from './gen/ReviewView';
export type { Recent } from './gen/Recent';
export type { RecentKind } from './gen/RecentKind';
export type { RubricEntry } from './gen/RubricEntry';
export type { Session } from './gen/Session';
export type { SessionFile } from './gen/SessionFile';
export type { SessionText } from './gen/SessionText';
export type { Speed } from './gen/Speed';
export type { CalibrationFile } from './gen/CalibrationFile';
export type { CriterionAgreement } from './gen/CriterionAgreement';
export type { Curve } from './gen/Curve';
export type { CurveSource } from './gen/CurveSource';
export type { FitState } from './gen/FitState';
export type { Fitted } from './gen/Fitted';
export type { LabelsCurve } from './gen/LabelsCurve';
export type { LabelsCurveEntry } from './gen/LabelsCurveEntry';
export type { LabelsCurveFile } from './gen/LabelsCurveFile';
export type { Point } from './gen/Point';
export type { Readiness } from './gen/Readiness';
export type { ResultEntry } from './gen/ResultEntry';
export type { ResultFile } from './gen/ResultFile';
export type { RowTexts } from './gen/RowTexts';
export type { ScoredEntry } from './gen/ScoredEntry';
export type { ScoredFile } from './gen/ScoredFile';
export type { ScoredText } from './gen/ScoredText';
export type { RiskCoveragePoint } from './gen/RiskCoveragePoint';
export type { RowRecord } from './gen/RowRecord';
export type { ScoreOptions } from './gen/ScoreOptions';
export type { ScoreProgress } from './gen/ScoreProgress';
export type { Selective } from './gen/Selective';
export type { SetProblem } from './gen/SetProblem';
export type { Summary } from './gen/Summary';
export type { TextIn } from './gen/TextIn';
export type { TextResult } from './gen/TextResult';
export type { QuestionSummary } from './gen/QuestionSummary';
export type { OptionCount } from './gen/OptionCount';
export type { JudgeRecord } from './gen/JudgeRecord';
export type { WeightType } from './gen/WeightType';

/** docs/rubric.md: one question of a rubric. The shell checks a rubric with the library's parser. */
export interface RubricQuestion {
  type: QuestionKind;
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

/** The bundled example: a rubric file and texts to score with it. */
export interface Example extends Omit<ShellExample, 'rubric'> {
  rubric: Rubric;
}

/** What the Evaluate page asks for: the shell's request with the page's choices always given. */
export interface RunRequest extends ShellRunRequest {
  /** Path of the eval set (from list_eval_sets or pick_file). */
  evalSet: string;
  /** Model path; omitted = the default model. */
  model?: string;
  mode: Mode;
  shots: number;
  debias: DebiasMode;
  pruneHead: boolean;
  /** Prompt layout: default (readout-v1) or terse (readout-terse-v1). */
  prompt?: 'default' | 'terse';
  /** Path of a calibration file (from pick_file); omitted = no temperature. */
  calibration?: string;
}

export type Device = 'auto' | 'cpu' | 'cuda' | 'metal';

/** The settings as the page holds them: the shell's, with the device narrowed and 0 threads for
 * all cores (the shell keeps none: api.ts converts both ways). */
export interface Settings extends Omit<SettingsView, 'device' | 'threads' | 'defaultModel'> {
  /** Path of the default model. */
  defaultModel: string;
  device: Device;
  /** 0 = all cores. */
  threads: number;
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
  | 'chat_template' // open *.jinja
  | 'export_csv' // save *.csv
  | 'export_json' // save *.json
  | 'calibration' // open *.json (a calibration file from `readout calibrate`)
  | 'answers' // open *.jsonl (answers from `readout score --out`)
  | 'texts'; // open *.csv / *.jsonl (the texts they were scored from)
