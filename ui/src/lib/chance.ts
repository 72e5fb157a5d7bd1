// The Evaluate result's headline: how often the model was right against how often guessing would
// be (the result file's `chance`: uniform guessing among each question's options, averaged as the
// headline figure averages), and one plain sentence on the gap. The line between "barely" and
// "clearly" is the Score page verdict's (POOR_GAP points above guessing), so both pages agree.
import { POOR_GAP } from './verdict';

export type AgainstGuessing = 'worse' | 'barely' | 'clearly';

/** A share as whole percent with a space, as the headline writes it: 0.4123 → "41 %". */
export const wholePercent = (x: number): string => `${Math.round(x * 100)} %`;

/** Below guessing; under POOR_GAP points above it; or further. */
export function againstGuessing(accuracy: number, chance: number): AgainstGuessing {
  const gap = (accuracy - chance) * 100;
  if (gap < 0) return 'worse';
  return gap < POOR_GAP ? 'barely' : 'clearly';
}

export const GUESSING_WORDS: Record<AgainstGuessing, string> = {
  worse: 'Worse than guessing.',
  barely: 'Barely better than guessing.',
  clearly: 'Clearly better than guessing.',
};

/** "Right 41 % of the time (guessing: 36 %)"; without a chance figure, the first half alone. */
export function rightOfTheTime(accuracy: number, chance: number | null | undefined): string {
  const right = `Right ${wholePercent(accuracy)} of the time`;
  return chance === null || chance === undefined ? right : `${right} (guessing: ${wholePercent(chance)})`;
}
