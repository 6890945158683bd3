// Loading, empty and error states: every one says what is happening or why nothing is shown.
import type { ComponentChildren } from 'preact';
import { errorText } from '../api.ts';

export function Loading({ what }: { what: string }) {
  return (
    <div class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      loading {what}…
    </div>
  );
}

export function ErrorNote({ error, children }: { error: unknown; children?: ComponentChildren }) {
  return (
    <div class="error-note" role="alert">
      <strong>Could not load.</strong> {errorText(error)}
      {children}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}
