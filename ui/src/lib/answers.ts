// Exporting scored answers.
import type { TextIn, TextResult } from '../types';

const csvField = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** One line per text × criterion; `chosen` is empty where no answer was given, and `abstained` says why. */
export function answersCsv(texts: TextIn[], results: TextResult[]): string {
  const header = [
    'text_index',
    'text_id',
    'text',
    'criterion',
    'type',
    'chosen',
    'probability',
    'margin',
    'close',
    'order_unstable',
    'expected_level',
    'letter_mass',
    'abstained',
    'options',
  ];
  const lines = [header.join(',')];
  for (const r of results) {
    const t = texts[r.index];
    for (const c of r.criteria) {
      lines.push(
        [
          r.index,
          r.id ?? t?.id ?? '',
          t?.text ?? '',
          c.criterion,
          c.type,
          c.chosen,
          c.probability.toFixed(6),
          c.margin.toFixed(6),
          c.close,
          c.order_unstable === null ? 'not checked' : c.order_unstable,
          c.expected_level === undefined ? '' : c.expected_level.toFixed(6),
          c.letter_mass === undefined ? '' : c.letter_mass.toFixed(6),
          c.abstained ?? '',
          c.options.map((o) => `${o.id}=${o.probability.toFixed(4)}`).join('; '),
        ]
          .map(csvField)
          .join(','),
      );
    }
  }
  return lines.join('\r\n') + '\r\n';
}

/** The answers exactly as `readout score --json` prints them, one object per text, in a JSON array. */
export const answersJson = (results: TextResult[]): string => JSON.stringify(results, null, 2) + '\n';
