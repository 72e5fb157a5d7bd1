// Exporting scored answers. The CSV is the library's (`answersCsv` in ../api): one table for the
// app and `readout score --csv`.
import type { TextResult } from '../types';

/** The answers exactly as `readout score --json` prints them, one object per text, in a JSON array. */
export const answersJson = (results: TextResult[]): string => JSON.stringify(results, null, 2) + '\n';
