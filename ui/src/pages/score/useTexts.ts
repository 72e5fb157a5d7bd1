// The Score page's texts: pasted (one per line, or one in all) or read from a file — a CSV of any
// columns (a person chooses the one that holds the texts), JSON Lines or plain text — with the
// texts files opened lately.
import { useEffect, useState } from 'preact/hooks';
import { errorMessage, inTauri, pickFile, readTextsFile, recentAdd, recentList } from '../../api';
import { baseName } from '../../lib/format';
import { type CsvTable, columnOf, parsePasted, readTextFile, textsFromTable } from '../../lib/texts';
import type { SessionFile, TextIn } from '../../types';

/** A texts file open: its name, its path when a dialog gave one (read again at the next start),
 * the columns chosen in a CSV without a `text` column, and its texts. */
export interface OpenFile {
  name: string;
  path?: string;
  column?: string;
  idColumn?: string;
  texts: TextIn[];
}

/** The most text (characters) the session keeps of a file that has no path to read it from again. */
export const SESSION_TEXTS_LIMIT = 5_000_000;

/** A CSV waiting for a person to say which column holds the texts. */
export interface Picking {
  name: string;
  path?: string;
  table: CsvTable;
}

/** The column most likely to hold the texts: the one with the longest cells in the first rows. */
export function likelyTextColumn(table: CsvTable): number {
  const rows = table.rows.slice(0, 20);
  let best = 0;
  let bestLength = -1;
  table.header.forEach((_, c) => {
    const length = rows.reduce((sum, r) => sum + (r[c]?.length ?? 0), 0);
    if (length > bestLength) [best, bestLength] = [c, length];
  });
  return best;
}

/** The column likely to hold ids (`id`, `ticket_id`, `ID`…), or null. */
export function likelyIdColumn(table: CsvTable, text: number): number | null {
  const c = table.header.findIndex((h, i) => i !== text && /(^|[\s_-])id$/i.test(h.trim()));
  return c >= 0 ? c : null;
}

export function useTexts() {
  const [pasted, setPasted] = useState('');
  const [onePerLine, setOnePerLine] = useState(true);
  const [file, setFile] = useState<OpenFile | null>(null);
  const [picking, setPicking] = useState<Picking | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  // Whether `fileError` is about the file of last time, which could not be opened again.
  const [lastTime, setLastTime] = useState(false);
  const [recent, setRecent] = useState<string[]>([]);

  useEffect(() => {
    recentList().then(
      (r) => setRecent(r.texts),
      () => setRecent([]),
    );
  }, []);

  /** A file's contents taken in: its texts, or its columns to choose from (`choice`: the columns
   * chosen before, by name, when the file is read again). */
  function take(name: string, contents: string, path?: string, choice?: { column?: string; idColumn?: string }) {
    const r = readTextFile(name, contents);
    if ('table' in r) {
      const text = choice?.column ? columnOf(r.table.header, choice.column) : -1;
      if (text < 0) {
        setFile(null);
        setPicking({ name, path, table: r.table });
        return;
      }
      const id = choice?.idColumn ? columnOf(r.table.header, choice.idColumn) : -1;
      const texts = textsFromTable(r.table, text, id >= 0 ? id : null, name);
      setFile({ name, path, texts, column: r.table.header[text], idColumn: id >= 0 ? r.table.header[id] : undefined });
      setPicking(null);
      return;
    }
    if (r.texts.length === 0) throw new Error(`${name} has no texts.`);
    setPicking(null);
    setFile({ name, path, texts: r.texts });
  }

  /** The file input (a browser, or a file sent to the input): its contents, without a path. */
  async function openFile(e: Event) {
    const input = e.currentTarget as HTMLInputElement;
    const f = input.files?.[0];
    input.value = '';
    setFileError(null);
    setLastTime(false);
    if (!f) return;
    try {
      take(f.name, await f.text());
    } catch (err) {
      setFile(null);
      setFileError(errorMessage(err));
    }
  }

  /** A texts file by its path (a dialog's, or one of the recent files), remembered among them. */
  async function openPath(path: string, choice?: { column?: string; idColumn?: string }) {
    setFileError(null);
    setLastTime(false);
    try {
      take(baseName(path), await readTextsFile(path), path, choice);
      recentAdd('texts', path).then(
        (r) => setRecent(r.texts),
        () => undefined,
      );
    } catch (err) {
      setFile(null);
      setFileError(errorMessage(err));
      throw err;
    }
  }

  /** In the app, "Open a file…" is the native dialog (it gives the path, for the recent files
   * and the next start); in a browser, the file input's own chooser. */
  function onFileClick(e: Event) {
    if (!inTauri()) return;
    e.preventDefault();
    void (async () => {
      const path = await pickFile('texts').catch(() => null);
      if (path) await openPath(path).catch(() => undefined);
    })();
  }

  /** The texts of the column chosen in the picker, and their ids from `id` (null: none). */
  function chooseColumns(text: number, id: number | null) {
    if (!picking) return;
    setFileError(null);
    try {
      const texts = textsFromTable(picking.table, text, id, picking.name);
      if (texts.length === 0) throw new Error(`${picking.name} has no texts.`);
      setFile({ name: picking.name, path: picking.path, texts, column: picking.table.header[text], idColumn: id === null ? undefined : picking.table.header[id] });
      setPicking(null);
    } catch (err) {
      setFileError(errorMessage(err));
    }
  }

  /** Replace whatever is there with these texts, one per line. */
  function fill(texts: string[]) {
    setFile(null);
    setPicking(null);
    setOnePerLine(true);
    setPasted(texts.join('\n'));
  }

  /** The texts file as the session keeps it: by path when it has one, else its texts (up to
   * `SESSION_TEXTS_LIMIT` characters: a larger file is opened again by hand). */
  function sessionFile(): SessionFile | undefined {
    if (!file) return undefined;
    const { name, path, column, idColumn, texts } = file;
    if (path) return { name, path, column, idColumn };
    return texts.reduce((n, t) => n + t.text.length, 0) <= SESSION_TEXTS_LIMIT ? { name, texts } : undefined;
  }

  /** Put back the texts of a session: the box as typed, and the file (read again from its path:
   * a file gone since says so). */
  async function restore(s: { pasted: string; onePerLine: boolean; textsFile?: SessionFile | null }) {
    setPasted(s.pasted ?? '');
    setOnePerLine(s.onePerLine ?? true);
    const f = s.textsFile;
    if (!f) return;
    if (f.path) {
      await openPath(f.path, { column: f.column ?? undefined, idColumn: f.idColumn ?? undefined }).catch(() => setLastTime(true));
    } else if (f.texts?.length) {
      setFile({ name: f.name, texts: f.texts.map((t) => (t.id ? { id: t.id, text: t.text } : { text: t.text })) });
    }
  }

  return {
    pasted,
    setPasted,
    onePerLine,
    setOnePerLine,
    file,
    removeFile: () => {
      setFile(null);
      setPicking(null);
    },
    picking,
    cancelPicking: () => setPicking(null),
    chooseColumns,
    fileError,
    /** Whether the error is the file of last time, which could not be opened again. */
    fileErrorLastTime: lastTime,
    openFile,
    onFileClick,
    openPath: (path: string) => openPath(path).catch(() => undefined),
    recent,
    fill,
    sessionFile,
    restore,
    texts: file ? file.texts : picking ? [] : parsePasted(pasted, onePerLine),
  };
}
export type Texts = ReturnType<typeof useTexts>;
