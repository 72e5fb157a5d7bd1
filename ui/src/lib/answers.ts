// Scored answers in words and files. The CSV tables are the library's (`answersCsv`,
// `answersSheet`, `summaryCsv` in ../api): one writer for the app and `readout score --csv`.
import type { QuestionSummary, TextResult } from '../types';

/** The JSON export: the verdict's sentences, the summary per question (the library's counts), and
 * the answers exactly as `readout score --json` prints them, one object per text. */
export const answersJson = (results: TextResult[], summary: QuestionSummary[], verdict: string): string =>
  JSON.stringify({ verdict, summary, answers: results }, null, 2) + '\n';

/** Numbers as runs: [1, 2, 3, 5, 7, 8] → "1–3, 5, 7–8". `numbers` sorted ascending, no repeats. */
export function ranges(numbers: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
    out.push(i === j ? `${numbers[i]}` : `${numbers[i]}–${numbers[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/** What a stopped run scored, by the texts' numbers as the table shows them (from 1):
 * "Stopped after 6 of 200 texts: texts 1–6 are scored; 7–200 were not." The library returns the
 * texts in order but scores them in the prompt tree's order, so the done ones need not be the
 * first: both lists are given as runs. `done`: the 0-based indices scored. */
export function stoppedWords(done: number[], count: number): string {
  const scored = new Set(done);
  const yes = [...scored].sort((a, b) => a - b).map((i) => i + 1);
  const no: number[] = [];
  for (let i = 0; i < count; i++) if (!scored.has(i)) no.push(i + 1);
  const texts = (ns: number[]) => `${ns.length === 1 ? 'text' : 'texts'} ${ranges(ns)}`;
  const head = `Stopped after ${yes.length} of ${count} text${count === 1 ? '' : 's'}`;
  if (yes.length === 0) return `${head}: none is scored.`;
  return `${head}: ${texts(yes)} ${yes.length === 1 ? 'is' : 'are'} scored; ${ranges(no)} ${no.length === 1 ? 'was' : 'were'} not.`;
}

/** A question's summary in words: "62 % billing · 20 % technical · 4 no answer" (the counts on hover). */
export const shareOf = (n: number, of: number): string => `${of === 0 ? 0 : Math.round((100 * n) / of)} %`;

/** An option as the table shows it: Yes/No, a choice's id, a level with its description. */
export function optionWords(type: QuestionSummary['type'], id: string, description: string): string {
  if (type === 'noul') return id === 'yes' ? 'yes' : 'no';
  if (type === 'score') return `${id}: ${description}`;
  return id;
}

/** Which texts (0-based indices) a summary filter keeps: those whose answer to `criterion` is
 * `option` (null: no answer). */
export function textsWith(results: TextResult[], criterion: string, option: string | null): Set<number> {
  const keep = new Set<number>();
  for (const r of results) {
    const c = r.criteria.find((x) => x.criterion === criterion);
    if (c && (option === null ? c.chosen === null : c.chosen === option)) keep.add(r.index);
  }
  return keep;
}

/** Answers flagged (close, changed on reorder, or not given), as the library counts them. */
export const flaggedCount = (summary: QuestionSummary[]): number => summary.reduce((n, q) => n + q.flagged, 0);
