// Step 1 of the Score page: the texts, pasted or opened from a file, or the bundled example.
import { Card, ErrorBox } from '../../components/ui';
import type { Texts } from './useScore';

export function TextsCard(props: { texts: Texts; onExample: () => void; exampleDisabled: boolean }) {
  const { file, texts } = props.texts;
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
          <span>
            <strong>{file.name}</strong> · {file.texts.length} text{file.texts.length === 1 ? '' : 's'}
          </span>
          <button type="button" class="link" onClick={props.texts.removeFile}>
            Remove file
          </button>
        </div>
      ) : (
        <>
          <label for="texts" class="sr-only">
            Texts to score
          </label>
          <textarea
            id="texts"
            rows={5}
            value={props.texts.pasted}
            placeholder="Paste a text here, for example: I was charged twice this month, please refund one of them."
            onInput={(e) => props.texts.setPasted(e.currentTarget.value)}
          />
          <div class="row wrap">
            <label class="check">
              <input type="checkbox" checked={props.texts.onePerLine} onChange={(e) => props.texts.setOnePerLine(e.currentTarget.checked)} />
              Each line is a separate text
            </label>
            <span class="muted">
              {texts.length} text{texts.length === 1 ? '' : 's'}
            </span>
            <span class="spacer" />
            <label class="button secondary file-button">
              Open a file (CSV or JSONL)…
              <input type="file" accept=".csv,.jsonl,.ndjson,.json,.txt" onChange={props.texts.openFile} data-testid="texts-file" />
            </label>
          </div>
        </>
      )}
      {props.texts.fileError && <ErrorBox title="That file could not be read" message={props.texts.fileError} />}
    </Card>
  );
}
