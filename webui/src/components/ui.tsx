// Small shared pieces: state badges, progress bars, error views, the page header.

import type { ComponentChildren } from "preact";
import { ApiError } from "../api";
import { Link } from "../router";
import { DASH, stateLabel, stateTone } from "./format";

export function StateBadge({ state }: { state: string | undefined }) {
  return <span class={`badge tone-${stateTone(state)}`} data-state={state ?? ""}>{stateLabel(state)}</span>;
}

export function Progress({ value }: { value: number | undefined | null }) {
  if (typeof value !== "number" || !Number.isFinite(value)) return <span class="muted">{DASH}</span>;
  const pct = Math.max(0, Math.min(100, value * 100));
  return (
    <span class="progress" title={`${pct.toFixed(1)} %`}>
      <span class="progress-bar"><span style={{ width: `${pct}%` }} /></span>
      <span class="progress-label">{pct.toFixed(0)}%</span>
    </span>
  );
}

export function Spinner({ label = "Loading…" }: { label?: string }) {
  return <div class="loading" role="status"><span class="spinner" />{label}</div>;
}

export function NotFound({ what }: { what?: string }) {
  return (
    <div class="empty-page" data-testid="not-found">
      <div class="big">404</div>
      <h1>{what ?? "Page not found"}</h1>
      <p class="muted">It may have been deleted, or the address is mistyped.</p>
      <p><Link href="/dashboard" class="button">Go to the dashboard</Link> <Link href="/experiments" class="button secondary">All experiments</Link></p>
    </div>
  );
}

/** An error that replaces the page (404, 403) or a banner above stale data (network). */
export function ErrorView({ error, what, retry }: { error: ApiError; what?: string; retry?: () => void }) {
  if (error.kind === "not-found") return <NotFound what={what ? `${what} not found` : undefined} />;
  if (error.kind === "forbidden")
    return (
      <div class="empty-page" data-testid="forbidden">
        <div class="big">403</div>
        <h1>You do not have access{what ? ` to this ${what.toLowerCase()}` : ""}</h1>
        <p class="muted">{error.message}</p>
        <p>Ask an administrator of this cluster for access.</p>
      </div>
    );
  return <ErrorBanner error={error} retry={retry} />;
}

export function ErrorBanner({ error, retry }: { error: ApiError; retry?: () => void }) {
  const text = error.kind === "network" ? "The master cannot be reached. Retrying…" : error.message;
  return (
    <div class={`banner ${error.kind === "network" ? "warn" : "bad"}`} role="alert" data-testid="error-banner">
      <span>{text}</span>
      {retry && <button class="small" onClick={retry}>Retry now</button>}
    </div>
  );
}

export function PageHeader({ title, crumbs, children }: { title: ComponentChildren; crumbs?: { href: string; label: string }[]; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      {crumbs && crumbs.length > 0 && (
        <nav class="crumbs">
          {crumbs.map((c) => (
            <span key={c.href}><Link href={c.href}>{c.label}</Link><span class="sep">/</span></span>
          ))}
        </nav>
      )}
      <div class="page-title-row">
        <h1>{title}</h1>
        <div class="actions">{children}</div>
      </div>
    </div>
  );
}

export function Card({ title, children, extra }: { title?: ComponentChildren; children: ComponentChildren; extra?: ComponentChildren }) {
  return (
    <section class="card">
      {(title || extra) && <div class="card-head"><h2>{title}</h2><div>{extra}</div></div>}
      <div class="card-body">{children}</div>
    </section>
  );
}

/** Previous/next buttons over a server-paged list; nothing when one page holds it all. `page` is
 * zero-based. */
export function Pager({ page, pageSize, total, onPage, prev = "‹ Previous", next = "Next ›" }: {
  page: number;
  pageSize: number;
  total: number;
  onPage: (page: number) => void;
  prev?: string;
  next?: string;
}) {
  if (total <= pageSize) return null;
  return (
    <div class="pager">
      <button class="small secondary" disabled={page === 0} onClick={() => onPage(page - 1)}>{prev}</button>
      <span>Page {page + 1} of {Math.ceil(total / pageSize)}</span>
      <button class="small secondary" disabled={(page + 1) * pageSize >= total} onClick={() => onPage(page + 1)}>{next}</button>
    </div>
  );
}
