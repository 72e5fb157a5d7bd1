// Getting a model from the Hugging Face hub: the download's progress and its Cancel button
// (shared by the Models page and the first-start offer), and the offer itself, shown while the
// app has no model at all. The shell downloads into the Hugging Face cache; a stopped download
// keeps what arrived, and the next one resumes from there.
import { toAppError, type AppError } from '../api';
import { Busy, Card, ErrorBox, Notice } from './ui';
import { bytes } from '../lib/format';
import type { CatalogueItem, ModelEntry, PullProgress } from '../types';

export type PullState =
  | { status: 'idle' }
  | { status: 'pulling'; spec: string; progress: PullProgress | null; cancelling: boolean }
  | { status: 'done'; spec: string; model: ModelEntry }
  | { status: 'stopped'; spec: string; message: string }
  | { status: 'error'; spec: string; message: string; error?: AppError };

/** A download its caller stopped (`Error::HubStopped`): the shell offers to resume it. */
export const isStopped = (e: unknown) => toAppError(e).fix?.kind === 'resume_download';

/** The download under way, finished, stopped or failed. */
export function PullStatus(props: { pull: PullState; onCancel: () => void; onRetry?: () => void }) {
  const p = props.pull;
  if (p.status === 'idle') return null;
  if (p.status === 'done') {
    return (
      <div data-testid="pull-done">
        <Notice>
          Downloaded <strong>{p.model.name}</strong> into the Hugging Face cache; it is among your models.
        </Notice>
      </div>
    );
  }
  if (p.status === 'stopped') {
    return (
      <div data-testid="pull-stopped">
        <Notice kind="warn">
          <strong>Download stopped.</strong> <span data-testid="pull-stopped-message">{p.message}</span>
        </Notice>
        {props.onRetry && (
          <div class="row end">
            <button type="button" class="secondary" data-testid="pull-resume" onClick={props.onRetry}>
              Resume download
            </button>
          </div>
        )}
      </div>
    );
  }
  if (p.status === 'error') {
    return <ErrorBox title={`${p.spec} could not be downloaded`} error={p.error ?? p.message} onRetry={props.onRetry} retryLabel="Try again" testid="pull-error" />;
  }
  const g = p.progress;
  const share = g && g.total > 0 ? g.done / g.total : 0;
  return (
    <div data-testid="pull-progress" data-state="running">
      {!g ? (
        <Busy label={`Asking the hub about ${p.spec}…`} />
      ) : (
        <div class="progress-wrap">
          <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={g.total} aria-valuenow={g.done} aria-label="Bytes downloaded">
            <div class="progress-fill" style={{ width: `${(share * 100).toFixed(1)}%` }} />
          </div>
          <div class="progress-text">
            <strong data-testid="pull-bytes">
              {bytes(g.done)} of {bytes(g.total)}
            </strong>
            <span>{Math.floor(share * 100)}%</span>
            <span class="mono small">{g.file}</span>
          </div>
        </div>
      )}
      <div class="row end">
        <button type="button" class="secondary" data-testid="cancel-pull" disabled={p.cancelling} onClick={props.onCancel}>
          {p.cancelling ? 'Stopping…' : 'Cancel'}
        </button>
      </div>
    </div>
  );
}

/** Shown while the app has no model: one button gets the catalogue's default from the hub. */
export function FirstStart(props: { item: CatalogueItem | undefined; pull: PullState; onPull: (spec: string) => void; onCancel: () => void }) {
  const item = props.item;
  const busy = props.pull.status === 'pulling';
  const retry = item && (props.pull.status === 'stopped' || props.pull.status === 'error') ? () => props.onPull(item.spec) : undefined;
  return (
    <Card title="Get a model to start" testid="first-start" class="first-start">
      <p>
        Readout reads answers with a small language model, and there is none on this computer yet.
        {item && (
          <>
            {' '}
            The default judge is <strong title={`${item.name}: ${item.spec} on the Hugging Face hub`}>{item.name}</strong>: about {bytes(item.size_bytes)} from the Hugging Face
            hub, {item.licence} licence. {item.good_for}
          </>
        )}
      </p>
      {item && props.pull.status !== 'pulling' && props.pull.status !== 'stopped' && (
        <div class="row wrap">
          <button type="button" data-testid="get-default" disabled={busy} title={`Download ${item.name} (${item.spec})`} onClick={() => props.onPull(item.spec)}>
            Get {item.name}
          </button>
          <a href="#/models" class="muted small">
            or choose another model, or add a file you have, on the Models page
          </a>
        </div>
      )}
      <PullStatus pull={props.pull} onCancel={props.onCancel} onRetry={retry} />
    </Card>
  );
}
