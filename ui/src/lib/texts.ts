// Reading texts to score from what a person pastes or opens (CSV or JSON Lines), as
// `readout score --texts` reads them (crates/readout/src/formats/texts.rs); a CSV without a `text`
// column gives its columns for a person to choose from instead of an error.
import type { TextIn } from '../types';

/** Pasted text: one text per line (blank lines skipped), or the whole box as one text. */
export function parsePasted(s: string, onePerLine: boolean): TextIn[] {
  if (!onePerLine) return s.trim() ? [{ text: s.trim() }] : [];
  return s
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .map((text) => ({ text }));
}

/** RFC 4180 CSV: quoted fields, doubled quotes, newlines inside quotes. */
export function parseCsvRecords(s: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const text = s.replace(/^\uFEFF/, '');
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
      i++;
      continue;
    }
    if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      out.push(row);
      row = [];
      field = '';
    } else field += c;
    i++;
  }
  if (field !== '' || row.length) {
    row.push(field);
    out.push(row);
  }
  return out.filter((r) => r.some((f) => f.trim() !== ''));
}

export class TextFileError extends Error {}

/** A CSV whose texts column a person chooses: its header and its rows (the header left out). */
export interface CsvTable {
  header: string[];
  rows: string[][];
}

/** What a texts file gives: its texts, or — a CSV without a `text` column — its table, for a
 * person to say which column holds the texts. */
export type TextFile = { texts: TextIn[] } | { table: CsvTable };

const headerName = (h: string) => h.trim().toLowerCase();

/** The column of `want` in a header, by name (any case), or -1. */
export const columnOf = (header: string[], want: string): number => header.map(headerName).indexOf(want.toLowerCase());

/**
 * The texts of a CSV's column `text` (a row number counted from 1 for the header, as an editor
 * shows lines), with ids from column `id` when one is chosen. An empty text is refused by its
 * line, so nothing is scored short without a word.
 */
export function textsFromTable(table: CsvTable, text: number, id: number | null, file: string): TextIn[] {
  const name = table.header[text]?.trim() || `column ${text + 1}`;
  return table.rows.map((r, i) => {
    const t = r[text] ?? '';
    if (!t.trim()) throw new TextFileError(`${file}, line ${i + 2}: the “${name}” column is empty there. Fill it in, or remove that line.`);
    const out: TextIn = { text: t };
    if (id !== null && r[id]?.trim()) out.id = r[id].trim();
    return out;
  });
}

/**
 * A CSV with a header row, as `readout score --texts` reads it: the `text` column (or `state`) is
 * the text, an `id` column is carried along. Without such a column: a one-column file is read as
 * texts with no header; a file of several columns gives its table, for a person to choose.
 */
export function readCsv(s: string, file: string): TextFile {
  const records = parseCsvRecords(s);
  if (records.length === 0) throw new TextFileError(`${file} has no rows.`);
  const header = records[0];
  const t = columnOf(header, 'text') >= 0 ? columnOf(header, 'text') : columnOf(header, 'state');
  const table = { header, rows: records.slice(1) };
  if (t < 0) {
    if (header.length === 1) return { texts: records.map((r) => ({ text: r[0] })) };
    if (table.rows.length === 0) throw new TextFileError(`${file} has a header line but no texts under it.`);
    return { table };
  }
  const id = columnOf(header, 'id');
  return { texts: textsFromTable(table, t, id >= 0 ? id : null, file) };
}

/** A CSV's texts; one without a `text` column is refused (the page offers the column picker instead: `readTextFile`). */
export function parseCsv(s: string, file: string): TextIn[] {
  const r = readCsv(s, file);
  if ('texts' in r) return r.texts;
  throw new TextFileError(`${file} has no column named “text” (its columns: ${r.table.header.join(', ')}).`);
}

/** JSON Lines: each line a JSON string, or an object with `text` (or `state`) and an optional `id` (as `readout score --texts`). */
export function parseJsonl(s: string, file: string): TextIn[] {
  const out: TextIn[] = [];
  s.replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .forEach((line, i) => {
      if (!line.trim()) return;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        throw new TextFileError(`${file}, line ${i + 1}: this line is not readable. Each line holds one text in quotes, or {"text": …}.`);
      }
      const o = v && typeof v === 'object' ? (v as { text?: unknown; state?: unknown; id?: unknown }) : null;
      const text = typeof v === 'string' ? v : typeof o?.text === 'string' ? o.text : typeof o?.state === 'string' ? o.state : null;
      if (text === null) throw new TextFileError(`${file}, line ${i + 1}: no text on this line. Each line holds one text in quotes, or {"text": …}.`);
      const item: TextIn = { text };
      if (o && o.id !== undefined && o.id !== null) item.id = typeof o.id === 'string' ? o.id : JSON.stringify(o.id);
      out.push(item);
    });
  return out;
}

/** A texts file by its name: CSV (perhaps with columns to choose), JSON Lines, or plain text with one text a line. */
export function readTextFile(name: string, contents: string): TextFile {
  const lower = name.toLowerCase();
  if (lower.endsWith('.csv')) return readCsv(contents, name);
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson') || lower.endsWith('.json')) return { texts: parseJsonl(contents, name) };
  if (lower.endsWith('.txt')) return { texts: parsePasted(contents, true) };
  throw new TextFileError(`${name}: open a .csv or .jsonl file, or a .txt file with one text a line.`);
}

/** A texts file's texts (a CSV without a `text` column refused: see `readTextFile`). */
export function parseTextFile(name: string, contents: string): TextIn[] {
  const r = readTextFile(name, contents);
  if ('texts' in r) return r.texts;
  return parseCsv(contents, name);
}
