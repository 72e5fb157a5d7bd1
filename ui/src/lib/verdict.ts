// The verdict above a scoring's answers: one sentence on how far to trust them and the step that
// would help. A pure function of the judge's last measured accuracy (its newest complete run in
// the results folder, against guessing) and of the answers' flags, so the words and thresholds
// live in one place.
//
// Levels, from the accuracy (mean family balanced accuracy) against chance (guessing):
//   poor    within POOR_GAP (10 points) of guessing, or below it; or half the answers flagged
//   fair    more than 10 points above guessing but under GOOD_ACCURACY (70 %) or GOOD_GAP (25 points)
//   good    at least 70 % and at least 25 points above guessing, with under half the answers flagged
//   unknown the model was never measured (and under half its answers are flagged)
// Without a chance figure (a file that lacks one) the accuracy alone decides: under 50 % poor.
import type { JudgeRecord } from '../types';

export type Level = 'good' | 'fair' | 'poor' | 'unknown';

/** Points (percent) above guessing under which a judge is "barely better than guessing". */
export const POOR_GAP = 10;
/** A "good" judge is right this often (percent), and this many points above guessing. */
export const GOOD_ACCURACY = 70;
export const GOOD_GAP = 25;
/** From this share of flagged answers on, the flags are noise: the verdict says so, not each cell. */
export const NOISY_FLAGS = 0.5;

export interface VerdictInput {
  /** The judge's last measured run; null when it was never measured. */
  record: JudgeRecord | null;
  /** The texts scored. */
  texts: number;
  /** Answers (texts × questions). */
  answers: number;
  /** Answers close, changed when the options were reordered, or not given. */
  flagged: number;
  /** Whether more than one option order was scored (order-unstable answers were looked for). */
  orderChecked: boolean;
}

export interface Verdict {
  level: Level;
  /** How far to trust the answers: the accuracy against guessing, or the flags. */
  headline: string;
  /** The step that would help. */
  step: string;
  /** "Option order not checked…", with one order; else null. */
  orderNote: string | null;
  /** Whether the flags single out some answers (under half flagged): badge the cells then. */
  badgeCells: boolean;
}

/** A share as whole percent: 0.4123 → "41 %". */
const percent = (x: number): string => `${Math.round(x * 100)} %`;

/** The eval set in words: the bundled one by what it is, another by its name. */
export const setWords = (name: string): string => (name === 'authored144' ? 'the bundled test set' : `the test set “${name}”`);

/** How far `accuracy` is from guessing, as a level. */
export function accuracyLevel(accuracy: number, chance: number | null): Exclude<Level, 'unknown'> {
  const acc = accuracy * 100;
  if (chance === null) return acc < 50 ? 'poor' : acc < GOOD_ACCURACY ? 'fair' : 'good';
  const gap = acc - chance * 100;
  if (gap < POOR_GAP) return 'poor';
  return acc >= GOOD_ACCURACY && gap >= GOOD_GAP ? 'good' : 'fair';
}

/** Whether so many answers are flagged that the flags say nothing about any one of them. */
export const tooManyFlagged = (flagged: number, answers: number): boolean => answers > 0 && flagged / answers >= NOISY_FLAGS;

export function verdict(v: VerdictInput): Verdict {
  const noisy = tooManyFlagged(v.flagged, v.answers);
  const orderNote = v.orderChecked ? null : 'Option order not checked: score with every rotation to see which answers hold.';
  const least = Math.min(5, v.texts);
  const leastWords = least === 1 ? 'the text' : `the ${least} texts`;
  const r = v.record;
  const right = r
    ? `${r.model} was right ${percent(r.accuracy)} of the time on ${setWords(r.eval_set)}${r.chance !== null ? ` (guessing: ${percent(r.chance)})` : ''}`
    : '';
  const byAccuracy: Level = r ? accuracyLevel(r.accuracy, r.chance) : 'unknown';
  const level: Level = noisy ? 'poor' : byAccuracy;

  let headline: string;
  if (noisy) {
    const what = v.orderChecked ? 'close calls, changed when the options were reordered, or not given' : 'close calls or not given';
    headline = `${v.flagged} of ${v.answers} answers are ${what}: these answers are not reliable.`;
    if (r) headline += ` ${right}.`;
  } else if (!r) {
    headline = 'No measured accuracy for this model yet: run it on Evaluate to see how often it is right.';
  } else if (byAccuracy === 'poor') {
    const worse = r.chance !== null && r.accuracy <= r.chance;
    headline = `${worse ? 'No better than guessing' : 'Barely better than guessing'}: ${right}.`;
  } else if (byAccuracy === 'fair') {
    headline = `Better than guessing, but often wrong: ${right}.`;
  } else {
    headline = `Usually right: ${right}.`;
  }

  let step: string;
  if (level === 'poor') {
    step = `Treat these answers as a rough first sort; try a larger judge, or review ${leastWords} it is least sure of.`;
  } else if (level === 'unknown') {
    step = v.flagged > 0 ? `Meanwhile, check the ${v.flagged} flagged answer${v.flagged === 1 ? '' : 's'} by hand.` : `Meanwhile, review ${leastWords} it is least sure of.`;
  } else if (v.flagged > 0) {
    step = `Check the ${v.flagged} flagged answer${v.flagged === 1 ? '' : 's'} by hand before relying on ${v.flagged === 1 ? 'it' : 'them'}.`;
  } else {
    step = level === 'good' ? `Spot-check a few by hand: review ${leastWords} it is least sure of.` : `Check a sample by hand before relying on them: review ${leastWords} it is least sure of.`;
  }
  return { level, headline, step, orderNote, badgeCells: !noisy };
}
