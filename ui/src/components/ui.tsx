// Small shared pieces: state boxes, badges, spinner.
import type { ComponentChildren } from 'preact';

export function ErrorBox(props: { title?: string; lead?: ComponentChildren; message: string; hint?: ComponentChildren; onRetry?: () => void; retryLabel?: string; testid?: string }) {
  return (
    <div class="state state-error" role="alert" data-state="error" data-testid={props.testid}>
      <div class="state-icon" aria-hidden="true">!</div>
      <div class="state-body">
        <strong>{props.title ?? 'Something went wrong'}</strong>
        {props.lead && <p class="error-lead">{props.lead}</p>}
        <p class="error-message" data-testid="error-message">
          {props.message}
        </p>
        {props.hint && <p class="error-hint">{props.hint}</p>}
        {props.onRetry && (
          <button type="button" class="secondary" onClick={props.onRetry}>
            {props.retryLabel ?? 'Try again'}
          </button>
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
