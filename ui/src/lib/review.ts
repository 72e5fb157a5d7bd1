// A review's figures in words a person reads without a statistics course: the options as the
// rubric names them, shares as whole percentages, agreement as "n of m texts". Nothing here
// computes a figure: they are the library's (the shell's `review_report`).
import type { Agreement, Estimate, Figure, QuestionKind } from '../types';

interface CriterionLike {
  type: QuestionKind;
  instructions?: string;
  options: { id: string; description: string }[];
}

/** An option as a person reads it: a choice's name, Yes or No, a level's words (the levels are
 * shown lowest first, so their number, from 0, would only clash with the keys, from 1). */
export function optionWords(c: CriterionLike, k: number): string {
  const o = c.options[k];
  if (!o) return '?';
  if (c.type === 'noul') return o.id === 'yes' ? 'Yes' : o.id === 'no' ? 'No' : o.description;
  if (c.type === 'score') return o.description;
  return o.id;
}

/** The option with id `id` in words (the report names options by id). */
export function optionIdWords(c: CriterionLike, id: string): string {
  const k = c.options.findIndex((o) => o.id === id);
  return k < 0 ? id : optionWords(c, k);
}

/** A share as a whole percentage, kept within 0–100 (an interval from few labels can reach past either end). */
export const share = (x: number): string => `${Math.round(Math.min(1, Math.max(0, x)) * 100)}%`;

/** An interval of zero width: every label alike, too few to show how far the share can be off. */
export const flat = (e: Estimate) => e.hi - e.lo < 1e-9;

/** A share with its interval, for a table cell: "62% (55%–69%)". */
export const shareRange = (e: Estimate): string => (flat(e) ? `${share(e.share)} (no range yet)` : `${share(e.share)} (${share(e.lo)}–${share(e.hi)})`);

/** "About 62% of the 20 texts are “billing”" and its interval, in a sentence. */
export function shareSentence(c: CriterionLike, k: number, e: Estimate, texts: number): string {
  const o = c.options[k];
  const about = `About ${share(e.share)} of the ${texts} texts`;
  const all = e.share < 0.5 ? `none of your ${e.n_labels} labels chose it` : `all your ${e.n_labels} labels chose it`;
  const between = flat(e) ? `(no range yet: ${all}, too few to tell how far off this may be)` : `(between ${share(e.lo)} and ${share(e.hi)})`;
  if (c.type === 'noul') {
    return `${about} get ${o?.id === 'no' ? '“no”' : '“yes”'} to “${c.instructions ?? ''}” ${between}.`;
  }
  if (c.type === 'score') return `${about} are “${o?.description}” ${between}.`;
  return `${about} are “${o?.id}” ${between}.`;
}

/** "The judge agrees with you on 4 of 5 texts." */
export function agreementSentence(a: Agreement): string {
  if (a.n === 0 || a.raw.value === null) return 'No text has both your answer and the judge’s yet.';
  const same = Math.round(a.raw.value * a.n);
  return `The judge agrees with you on ${same} of ${a.n} text${a.n === 1 ? '' : 's'}.`;
}

/** A figure with its 95% interval: "0.62 (0.20 to 0.90)"; "—" where the library gives none. */
export function figure(f: Figure, as: 'share' | 'number' = 'number'): { value: string; interval: string } {
  // (A value that rounds to zero from below reads 0.00, not −0.00.)
  const fmt = (x: number | null) => (x === null ? '—' : as === 'share' ? share(x) : x.toFixed(2).replace(/^-(0\.00)$/, '$1'));
  return {
    value: fmt(f.value),
    interval: f.lo === null || f.hi === null ? 'no interval yet' : `${fmt(f.lo)} to ${fmt(f.hi)}`,
  };
}

/** κ or α in words (Landis and Koch's bands, the ones people quote). */
export function beyondChanceWords(v: number | null): string {
  if (v === null) return 'cannot be said yet';
  if (v < 0) return 'worse than chance';
  if (v < 0.2) return 'slight';
  if (v < 0.4) return 'fair';
  if (v < 0.6) return 'moderate';
  if (v < 0.8) return 'substantial';
  return 'almost perfect';
}

/** How unsure the judge was about a text, in words. */
export function doubtWords(u: number): string {
  if (u >= 0.9) return 'very unsure';
  if (u >= 0.7) return 'unsure';
  if (u >= 0.4) return 'fairly sure';
  return 'sure';
}
