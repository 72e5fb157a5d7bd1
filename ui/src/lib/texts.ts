// Reading texts to score from what a person pastes or opens (CSV or JSON Lines).
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

/**
 * A CSV with a header row: the `text` column (or the only column) is the text, an `id` column is
 * carried along. A CSV without a `text` header and with one column is read as texts, no header.
 */
export function parseCsv(s: string, file: string): TextIn[] {
  const records = parseCsvRecords(s);
  if (records.length === 0) throw new TextFileError(`${file}: the file has no rows`);
  const header = records[0].map((h) => h.trim().toLowerCase());
  const t = header.indexOf('text');
  const id = header.indexOf('id');
  if (t < 0) {
    if (header.length === 1) return records.map((r) => ({ text: r[0] }));
    throw new TextFileError(
      `${file}:1: no column named \`text\` (columns: ${records[0].join(', ')}); name the column that holds the texts "text"`,
    );
  }
  return records.slice(1).map((r, i) => {
    const text = r[t] ?? '';
    if (!text.trim()) throw new TextFileError(`${file}:${i + 2}: column \`text\` is empty`);
    const out: TextIn = { text };
    if (id >= 0 && r[id]?.trim()) out.id = r[id].trim();
    return out;
  });
}

/** JSON Lines: each line a JSON string, or an object with `text` and an optional `id` (as `readout score --texts`). */
export function parseJsonl(s: string, file: string): TextIn[] {
  const out: TextIn[] = [];
  s.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new TextFileError(`${file}:${i + 1}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof v === 'string') out.push({ text: v });
    else if (v && typeof v === 'object' && typeof (v as { text?: unknown }).text === 'string') {
      const o = v as { text: string; id?: unknown };
      const item: TextIn = { text: o.text };
      if (o.id !== undefined && o.id !== null) item.id = String(o.id);
      out.push(item);
    } else throw new TextFileError(`${file}:${i + 1}: field \`text\`: missing; a line is a string or {"text": …, "id": …}`);
  });
  return out;
}

export function parseTextFile(name: string, contents: string): TextIn[] {
  const lower = name.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson') || lower.endsWith('.json')) return parseJsonl(contents, name);
  if (lower.endsWith('.csv')) return parseCsv(contents, name);
  if (lower.endsWith('.txt')) return parsePasted(contents, true);
  throw new TextFileError(`${name}: open a .csv or .jsonl file (or a .txt with one text per line)`);
}
