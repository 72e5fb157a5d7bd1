// The Score page's settings: the option order (every rotation unless a measured speed says these
// texts would take too long: lib/cost.ts), the model, and when to give no answer — chosen as a
// preset (off / normal / strict) or as the two exact numbers under More settings — and the speed
// of the last scoring, from which the page estimates what an order costs; and the answers
// exported lately.
import { useEffect, useState } from 'preact/hooks';
import { recentAdd, recentList } from '../../api';
import { defaultOrder, promptsPerText } from '../../lib/cost';
import type { RubricDraft } from '../../lib/rubric';
import type { DebiasMode, Speed, TextIn, TextResult } from '../../types';

/** "Answer only when sure": the two "no answer" fields each preset sets (percentages as typed). */
export const PRESETS = {
  off: { below: '', mass: '' },
  normal: { below: '50', mass: '' },
  strict: { below: '70', mass: '50' },
} as const;
export type Preset = keyof typeof PRESETS;

/** The preset the two fields match, or `custom`. */
export function presetOf(below: string, mass: string): Preset | 'custom' {
  const found = (Object.keys(PRESETS) as Preset[]).find((p) => PRESETS[p].below === below.trim() && PRESETS[p].mass === mass.trim());
  return found ?? 'custom';
}

/** Each question's option count (what every rotation multiplies): answers for a choice, 2 for
 * yes / no, levels for a score. */
export function optionCounts(draft: RubricDraft | null): number[] {
  if (!draft) return [];
  return draft.criteria.map((c) =>
    c.type === 'noul' ? 2 : c.type === 'score' ? c.levels.filter((l) => l.trim()).length : c.options.filter((o) => o.id.trim() || o.description.trim()).length,
  );
}

export function useSettings(texts: TextIn[], draft: RubricDraft | null) {
  // The person's choice of order; null: the default (`defaultOrder`).
  const [chosen, setChosen] = useState<DebiasMode | null>(null);
  const [model, setModel] = useState<string>('');
  // A jury: the models of the judges beside `model` ('' the default model); none: one judge.
  const [judges, setJudges] = useState<string[]>([]);
  // With a jury: no answer where its judges disagree.
  const [abstainDisagree, setAbstainDisagree] = useState(false);
  // When to give no answer (percentages as typed; empty: always answer).
  const [abstainBelow, setAbstainBelow] = useState('');
  const [abstainMass, setAbstainMass] = useState('');
  const [speed, setSpeed] = useState<Speed | null>(null);
  // The answers exported lately (paths, newest first).
  const [exports, setExports] = useState<string[]>([]);
  useEffect(() => {
    recentList().then(
      (r) => setExports(r.exports),
      () => setExports([]),
    );
  }, []);

  const options = optionCounts(draft);
  // A speed measured on another model says nothing of this one.
  const secondsPerPrompt = speed && speed.model === model ? speed.secondsPerPrompt : null;
  const debias: DebiasMode = chosen ?? defaultOrder(options, texts.length, secondsPerPrompt);

  /** Time a finished scoring: wall seconds per prompt read, for the next estimates. */
  function measure(done: { results: TextResult[]; debias: DebiasMode }, seconds: number, usedModel: string) {
    const prompts = done.results.length * promptsPerText(done.debias, options);
    if (prompts > 0 && seconds > 0) setSpeed({ model: usedModel, secondsPerPrompt: seconds / prompts });
  }

  return {
    debias,
    /** Whether the order is the default one (the person has not chosen). */
    debiasIsDefault: chosen === null,
    setDebias: (d: DebiasMode) => setChosen(d),
    /** The choice as the session keeps it (null: the default). */
    chosenDebias: chosen,
    restoreDebias: (d: DebiasMode | null) => setChosen(d),
    model,
    setModel,
    judges,
    setJudges,
    abstainDisagree,
    setAbstainDisagree,
    abstainBelow,
    setAbstainBelow,
    abstainMass,
    setAbstainMass,
    preset: presetOf(abstainBelow, abstainMass),
    setPreset: (p: Preset) => {
      setAbstainBelow(PRESETS[p].below);
      setAbstainMass(PRESETS[p].mass);
    },
    options,
    /** How many texts there are to score. */
    texts: texts.length,
    secondsPerPrompt,
    speed,
    setSpeed,
    measure,
    exports,
    /** Remember an export among the recent ones. */
    addExport: (path: string) =>
      void recentAdd('exports', path).then(
        (r) => setExports(r.exports),
        () => undefined,
      ),
  };
}
export type ScoreSettings = ReturnType<typeof useSettings>;
