// What an option order costs, in words a person can weigh: how many prompts the model reads per
// text under each way of handling the options' order, as a multiple of one order, and — when a
// scoring on this model has been timed — about how long these texts will take.
//
// The rule for the Score page's default ("speed allows"): every rotation of the options (the
// recommended order, `cyclic`) unless a measured speed says that reading every rotation of these
// texts would take longer than `ROTATION_BUDGET_SECONDS`; then one order. With nothing measured
// the page starts on every rotation. The person's own choice always wins over the default.
// (No imports: ui/tests/e2e.mjs loads this file on its own to check the arithmetic.)

/** Every rotation is the default while these texts would take at most this long (seconds). */
export const ROTATION_BUDGET_SECONDS = 60;

/** The ways of handling the options' order (the library's debias modes). */
export type OrderMode = 'none' | 'cyclic' | 'permutation' | 'calibrate' | 'pride' | 'batch';

/** Share of the texts PriDe reads in every rotation to estimate the letter bias (the library's 5%). */
const PRIDE_SAMPLE = 0.05;

function factorial(k: number): number {
  let f = 1;
  for (let i = 2; i <= k; i++) f *= i;
  return f;
}

/** Prompts one question with `k` options takes per text under `mode`. (The content-free prompts
 * of `calibrate` are read once per rubric, not per text, so they are left out.) */
export function promptsPerQuestion(mode: OrderMode, k: number): number {
  switch (mode) {
    case 'none':
      return 1;
    case 'cyclic':
    case 'calibrate':
    case 'batch':
      return k;
    case 'permutation':
      return factorial(k);
    case 'pride':
      return 1 + PRIDE_SAMPLE * (k - 1);
  }
}

/** Prompts one text takes: the sum over the rubric's questions (`options`: each one's option count). */
export function promptsPerText(mode: OrderMode, options: number[]): number {
  return options.reduce((sum, k) => sum + promptsPerQuestion(mode, k), 0);
}

/** How many times the work of one order `mode` is, for questions with these option counts. */
export function timesOneOrder(mode: OrderMode, options: number[]): number {
  return options.length === 0 ? 1 : promptsPerText(mode, options) / options.length;
}

/** Seconds `texts` texts take under `mode` at `secondsPerPrompt`. */
export function estimateSeconds(mode: OrderMode, options: number[], texts: number, secondsPerPrompt: number): number {
  return texts * promptsPerText(mode, options) * secondsPerPrompt;
}

/** The order the page starts on: every rotation, unless a measured speed puts these texts in
 * every rotation over the budget. */
export function defaultOrder(options: number[], texts: number, secondsPerPrompt: number | null): OrderMode {
  if (secondsPerPrompt === null || texts === 0 || options.length === 0) return 'cyclic';
  return estimateSeconds('cyclic', options, texts, secondsPerPrompt) <= ROTATION_BUDGET_SECONDS ? 'cyclic' : 'none';
}

/** A multiple in words, to a tenth under 10: 3×, 2.5×, 24×. */
export function times(x: number): string {
  return `${x >= 10 ? Math.round(x) : Math.round(x * 10) / 10}×`;
}

/** The questions' option counts in words: "3 options", "2 to 4 options". */
export function optionsWords(options: number[]): string {
  if (options.length === 0) return '';
  const lo = Math.min(...options);
  const hi = Math.max(...options);
  return lo === hi ? `${lo} options` : `${lo} to ${hi} options`;
}

/** A time in plain words, rounded as an estimate is: "about 20 s", "about 4 min", "about 2 h". */
export function aboutTime(seconds: number): string {
  if (seconds < 1) return 'under a second';
  if (seconds < 60) return `about ${seconds < 10 ? Math.round(seconds) : Math.round(seconds / 5) * 5} s`;
  if (seconds < 3600) return `about ${Math.round(seconds / 60)} min`;
  return `about ${(seconds / 3600).toFixed(seconds < 36000 ? 1 : 0).replace(/\.0$/, '')} h`;
}
