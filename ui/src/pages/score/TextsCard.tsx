// Step 1 of the Score page: the texts, pasted or opened from a file (a CSV of any columns: the
// person picks the one holding the texts), or the bundled example; and the texts files opened lately.
import { useEffect, useState } from 'preact/hooks';
import { Card, ErrorBox } from '../../components/ui';
import { baseName } from '../../lib/format';
import { likelyIdColumn, likelyTextColumn, type Picking, type Texts } from './useTexts';

/** A cell shown as a preview: one line, cut short. */
const preview = (s: string | undefined) => {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > 90 ? `${t.slice(0, 89)}…` : t;
};

/** A CSV without a `text` column: which column holds the texts (each shown with its first row),
 * and which, if any, names them. */
function ColumnPicker(props: { picking: Picking; onChoose: (text: number, id: number | null) => void; onCancel: () => void }) {
  const { name, table } = props.picking;
  const [text, setText] = useState(() => likelyTextColumn(table));
  const [id, setId] = useState<number | null>(() => likelyIdColumn(table, likelyTextColumn(table)));
  useEffect(() => {
    const t = likelyTextColumn(table);
    setText(t);
    setId(likelyIdColumn(table, t));
  }, [table]);
  const first = table.rows[0] ?? [];
  return (
    <div class="column-picker" data-testid="column-picker">
      <p>
        <strong>{name}</strong> has {table.rows.length} row{table.rows.length === 1 ? '' : 's'}. Which column holds the texts to score?
      </p>
      <fieldset class="column-list">
        <legend class="sr-only">The column with the texts</legend>
        {table.header.map((h, i) => (
          <label key={i} class="check column-choice">
            <input type="radio" name="text-column" value={i} checked={text === i} onChange={() => setText(i)} data-testid="text-column" data-column={h} />
            <span>
              <strong>{h.trim() || `Column ${i + 1}`}</strong>
              <span class="muted small"> — first row: “{preview(first[i])}”</span>
            </span>
          </label>
        ))}
      </fieldset>
      <div class="row wrap">
        <label for="id-column">Name each text by</label>
        <select
          id="id-column"
          value={id === null ? '' : String(id)}
          onChange={(e) => setId(e.currentTarget.value === '' ? null : Number(e.currentTarget.value))}
          data-testid="id-column"
        >
          <option value="">Its row number</option>
          {table.header.map((h, i) =>
            i === text ? null : (
              <option key={i} value={String(i)}>
                {h.trim() || `Column ${i + 1}`}
              </option>
            ),
          )}
        </select>
        <span class="muted small">(optional: shown beside each answer and in exports)</span>
        <span class="spacer" />
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="primary" onClick={() => props.onChoose(text, id === text ? null : id)} data-testid="use-column">
          Use these texts
        </button>
      </div>
    </div>
  );
}

/** Files opened lately, by name (the whole path on hover); one press opens one again. */
export function RecentFiles(props: { title: string; paths: string[]; onOpen: (path: string) => void; testid: string; disabled?: boolean }) {
  if (props.paths.length === 0) return null;
  return (
    <div class="recent-files row wrap" data-testid={props.testid}>
      <span class="muted small">{props.title}</span>
      {props.paths.map((p) => (
        <button key={p} type="button" class="link recent-file" title={p} onClick={() => props.onOpen(p)} disabled={props.disabled} data-path={p}>
          {baseName(p)}
        </button>
      ))}
    </div>
  );
}

export function TextsCard(props: { texts: Texts; onExample: () => void; exampleDisabled: boolean }) {
  const t = props.texts;
  const { file, texts, picking } = t;
  return (
    <Card
      step={1}
      title="Texts"
      testid="texts-card"
      actions={
        <button type="button" class="secondary" onClick={props.onExample} disabled={props.exampleDisabled} data-testid="try-example">
          Try the example
        </button>
      }
    >
      {file ? (
        <div class="file-chip">
          <span title={file.path}>
            <strong>{file.name}</strong> · {file.texts.length} text{file.texts.length === 1 ? '' : 's'}
            {file.column && <span class="muted"> (column “{file.column}”)</span>}
          </span>
          <button type="button" class="link" onClick={t.removeFile}>
            Remove file
          </button>
        </div>
      ) : picking ? (
        <ColumnPicker picking={picking} onChoose={t.chooseColumns} onCancel={t.cancelPicking} />
      ) : (
        <>
          <label for="texts" class="sr-only">
            Texts to score
          </label>
          <textarea
            id="texts"
            rows={5}
            value={t.pasted}
            placeholder="Paste a text here, for example: I was charged twice this month, please refund one of them."
            onInput={(e) => t.setPasted(e.currentTarget.value)}
          />
          <div class="row wrap">
            <label class="check">
              <input type="checkbox" checked={t.onePerLine} onChange={(e) => t.setOnePerLine(e.currentTarget.checked)} />
              Each line is a separate text
            </label>
            <span class="muted">
              {texts.length} text{texts.length === 1 ? '' : 's'}
            </span>
            <span class="spacer" />
            <label class="button secondary file-button">
              Open a file (CSV or JSONL)…
              <input type="file" accept=".csv,.jsonl,.ndjson,.json,.txt" onChange={t.openFile} onClick={t.onFileClick} data-testid="texts-file" />
            </label>
          </div>
        </>
      )}
      {!picking && <RecentFiles title="Recent files:" paths={t.recent} onOpen={t.openPath} testid="recent-texts" />}
      {t.fileError && (
        <ErrorBox
          title={t.fileErrorLastTime ? 'The texts you had open last time could not be opened again' : 'That file could not be read'}
          message={t.fileError}
          testid="texts-error"
        />
      )}
    </Card>
  );
}
