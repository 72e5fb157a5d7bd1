// Small shared pieces: state boxes, badges, spinner.
import type { ComponentChildren } from 'preact';
import { toAppError, type Fix } from '../api';

/** A fix's button label, in the person's words. */
export function fixLabel(fix: Fix): string {
  switch (fix.kind) {
    case 'truncate_middle':
      return 'Cut long texts';
    case 'skip_bad_lines':
      return 'Skip bad lines';
    case 'use_template':
      return `Use the ${fix.name} template`;
    case 'open_models':
      return 'Go to Models';
    case 'resume_download':
      return 'Resume download';
    case 'retry':
      return 'Try again';
  }
}

/**
 * A failure: the plain message, the fix as a button, and the library's own text folded under
 * Details. `error` is what the call threw (an `AppError` from api.ts, or anything with a
 * `message`); `message` a sentence the page words itself. The page applies a fix through
 * `onFix` (Go to Models it applies here); Try again is `onRetry`, shown once.
 */
export function ErrorBox(props: {
  title?: string;
  lead?: ComponentChildren;
  message?: string;
  error?: unknown;
  hint?: ComponentChildren;
  onRetry?: () => void;
  retryLabel?: string;
  onFix?: (fix: Fix) => void;
  /** A fix being applied: its button is disabled. */
  fixing?: boolean;
  testid?: string;
}) {
  const e = props.error === undefined ? null : toAppError(props.error);
  const message = props.message ?? e?.message ?? '';
  const fix = e?.fix ?? null;
  const onFix = fix?.kind === 'open_models' && !props.onFix ? () => (location.hash = '#/models') : props.onFix;
  const fixButton = fix && fix.kind !== 'retry' && onFix;
  const retry = props.onRetry ?? (fix?.kind === 'retry' && props.onFix ? () => props.onFix?.(fix) : undefined);
  return (
    <div class="state state-error" role="alert" data-state="error" data-testid={props.testid}>
      <div class="state-icon" aria-hidden="true">!</div>
      <div class="state-body">
        <strong>{props.title ?? 'Something went wrong'}</strong>
        {props.lead && <p class="error-lead">{props.lead}</p>}
        <p class="error-message" data-testid="error-message">
          {message}
        </p>
        {props.hint && <p class="error-hint">{props.hint}</p>}
        {(fixButton || retry) && (
          <div class="row wrap error-actions">
            {fixButton && (
              <button type="button" class="primary" data-testid="error-fix" data-fix={fix.kind} disabled={props.fixing} onClick={() => onFix(fix)}>
                {fixLabel(fix)}
              </button>
            )}
            {retry && (
              <button type="button" class="secondary" data-testid="error-retry" onClick={retry}>
                {props.retryLabel ?? 'Try again'}
              </button>
            )}
          </div>
        )}
        {e?.details && e.details !== message && (
          <details class="error-details" data-testid="error-details">
            <summary>Details</summary>
            <pre>{e.details}</pre>
          </details>
        )}
      </div>
    </div>
  );
}

export function Empty(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state state-empty" data-state="empty">
      <div class="state-icon" aria-hidden="true">○</div>
      <div class="state-body">
        <strong>{props.title}</strong>
        {props.children && <div class="muted">{props.children}</div>}
      </div>
    </div>
  );
}

export function Busy(props: { label: string; children?: ComponentChildren }) {
  return (
    <div class="state state-busy" data-state="running" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      <div class="state-body">
        <strong>{props.label}</strong>
        {props.children && <div class="muted">{props.children}</div>}
      </div>
    </div>
  );
}

export function Badge(props: { kind: 'close' | 'unstable' | 'ok' | 'partial' | 'info' | 'derived' | 'abstain'; title?: string; children: ComponentChildren }) {
  return (
    <span class={`badge badge-${props.kind}`} title={props.title}>
      {props.children}
    </span>
  );
}

export function Card(props: { title?: ComponentChildren; step?: number; actions?: ComponentChildren; children: ComponentChildren; class?: string; testid?: string }) {
  return (
    <section class={`card ${props.class ?? ''}`} data-testid={props.testid}>
      {(props.title || props.actions) && (
        <header class="card-head">
          <h2>
            {props.step !== undefined && <span class="step">{props.step}</span>}
            {props.title}
          </h2>
          {props.actions && <div class="card-actions">{props.actions}</div>}
        </header>
      )}
      {props.children}
    </section>
  );
}

export function Notice(props: { children: ComponentChildren; kind?: 'ok' | 'warn' }) {
  return (
    <div class={`notice notice-${props.kind ?? 'ok'}`} role="status">
      {props.children}
    </div>
  );
}
