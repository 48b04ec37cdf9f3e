// /experiments (and /projects/:id/experiments): server-side paged, filtered and sorted through
// GET /api/v1/experiments. Filters live in the URL's query string, so a filtered view is a link.

import { useEffect, useState } from "preact/hooks";
import { api, ApiError, clusterApi, forgetConditional, type BulkAction, type Experiment, type SortBy } from "../api";
import { useResource } from "../components/data";
import { ExperimentTable } from "../components/ExperimentTable";
import { isLive } from "../components/format";
import { Card, ErrorBanner, ErrorView, PageHeader, Spinner } from "../components/ui";
import { navigate, setQuery, type Location } from "../router";
import { experimentsFilter, experimentsView, PAGE_SIZE, STATES } from "./experimentsQuery";

export function Experiments({ loc, projectId }: { loc: Location; projectId?: number }) {
  const view = experimentsView(loc.query);
  const { state, user, name, label, sortBy, orderBy, page, archived } = view;

  // Text inputs update the URL after a pause in typing.
  const [nameDraft, setNameDraft] = useState(name);
  const [userDraft, setUserDraft] = useState(user);
  const [labelDraft, setLabelDraft] = useState(label);
  useEffect(() => {
    const t = window.setTimeout(() => {
      if (nameDraft !== name || userDraft !== user || labelDraft !== label)
        setQuery({ name: nameDraft.trim(), user: userDraft.trim(), label: labelDraft.trim(), page: undefined });
    }, 300);
    return () => window.clearTimeout(t);
  }, [nameDraft, userDraft, labelDraft]);

  const list = useResource(
    (signal) => api.experiments(experimentsFilter(view, projectId), signal),
    [state, user, name, label, sortBy, orderBy, page, archived, projectId],
    { intervalMs: 5000, live: (r) => r.experiments.some((e) => isLive(e.state)) },
  );

  // Bulk actions: the selection survives polling, not a new filter or page.
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [bulk, setBulk] = useState<BulkOutcome | null>(null);
  useEffect(() => {
    setSelected(new Set());
    setBulk(null);
  }, [state, user, name, label, sortBy, orderBy, page, archived, projectId]);
  const onSelect = (ids: number[], on: boolean) =>
    setSelected((prev) => {
      const next = new Set(prev);
      ids.forEach((id) => (on ? next.add(id) : next.delete(id)));
      return next;
    });
  const runBulk = async (what: BulkWhat) => {
    const chosen = (list.data?.experiments ?? []).filter((e) => selected.has(e.id));
    if (!chosen.length) return;
    if (what.kind === "tensorboard") {
      navigate(`/tasks?experiments=${chosen.map((e) => e.id).join(",")}`);
      return;
    }
    setBulk({ running: describe(what), errors: new Map(), failure: null, done: 0 });
    const outcome = await runBulkAction(what, chosen);
    setBulk(outcome);
    forgetConditional();
    list.reload();
  };

  const total = list.data?.pagination.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const onSort = (s: SortBy) =>
    setQuery({ sort: s, order: s === sortBy && orderBy === "ORDER_BY_DESC" ? "asc" : undefined, page: undefined });

  return (
    <div>
      <PageHeader title="Experiments" crumbs={projectId ? [{ href: "/experiments", label: "Experiments" }] : undefined} />
      <div class="filters" data-testid="experiment-filters">
        <input placeholder="Name contains…" value={nameDraft} onInput={(e) => setNameDraft(e.currentTarget.value)} aria-label="Name" />
        <select value={state} onChange={(e) => setQuery({ state: e.currentTarget.value || undefined, page: undefined })} aria-label="State">
          <option value="">All states</option>
          {STATES.map((s) => <option key={s} value={s}>{s.replace("STATE_", "").replace(/_/g, " ").toLowerCase()}</option>)}
        </select>
        <input placeholder="User" value={userDraft} onInput={(e) => setUserDraft(e.currentTarget.value)} aria-label="User" />
        <input placeholder="Label" value={labelDraft} onInput={(e) => setLabelDraft(e.currentTarget.value)} aria-label="Label" />
        <label class="check"><input type="checkbox" checked={archived} onChange={(e) => setQuery({ archived: e.currentTarget.checked ? "1" : undefined, page: undefined })} /> Show archived</label>
      </div>
      <BulkBar count={selected.size} run={runBulk} busy={!!bulk?.running} />
      {bulk && !bulk.running && <BulkSummary outcome={bulk} />}
      <Card>
        {list.error && <ErrorView error={list.error} retry={list.reload} />}
        {list.data ? (
          <ExperimentTable experiments={list.data.experiments} sortBy={sortBy} orderBy={orderBy} onSort={onSort}
            selected={selected} onSelect={onSelect} rowErrors={bulk?.errors} />
        ) : (
          !list.error && <Spinner />
        )}
        {list.data && <div class="pager" data-testid="pager">
          <span class="muted">{total ? `${(page - 1) * PAGE_SIZE + 1}–${Math.min(page * PAGE_SIZE, total)} of ${total}` : "0 experiments"}</span>
          <button class="small secondary" disabled={page <= 1} onClick={() => setQuery({ page: String(page - 1) })}>‹ Previous</button>
          <span>Page {page} of {pages}</span>
          <button class="small secondary" disabled={page >= pages} onClick={() => setQuery({ page: String(page + 1) })}>Next ›</button>
        </div>}
      </Card>
    </div>
  );
}

// ---- bulk actions ------------------------------------------------------------------------------

type BulkWhat = { kind: "action"; action: BulkAction } | { kind: "label"; add: boolean; label: string } | { kind: "tensorboard" };

interface BulkOutcome {
  /** What is running now (null once done). */
  running: string | null;
  /** The experiments that failed, with the master's reason. */
  errors: Map<number, string>;
  /** A failure of the whole request (network, 403). */
  failure: ApiError | null;
  done: number;
}

function describe(what: BulkWhat): string {
  if (what.kind === "label") return `${what.add ? "Adding" : "Removing"} label "${what.label}"`;
  if (what.kind === "tensorboard") return "Opening TensorBoard";
  return `${what.action.charAt(0).toUpperCase()}${what.action.slice(1)}`;
}

/** Lifecycle actions go through the project bulk endpoint (one request per project); labels one
 *  experiment at a time. Every experiment gets a result: its error, or none. */
async function runBulkAction(what: BulkWhat, chosen: Experiment[]): Promise<BulkOutcome> {
  const errors = new Map<number, string>();
  let failure: ApiError | null = null;
  let done = 0;
  const asError = (e: unknown) => (e instanceof ApiError ? e : new ApiError("server", String(e)));
  if (what.kind === "action") {
    const byProject = new Map<number, number[]>();
    chosen.forEach((e) => byProject.set(e.projectId, [...(byProject.get(e.projectId) ?? []), e.id]));
    for (const [projectId, ids] of byProject) {
      try {
        const results = await clusterApi.bulk(projectId, what.action, ids);
        for (const r of results) {
          if (r.error) errors.set(r.id, r.error);
          else done++;
        }
      } catch (e) {
        failure = asError(e);
        ids.forEach((id) => errors.set(id, failure!.message));
      }
    }
  } else if (what.kind === "label") {
    for (const e of chosen) {
      try {
        await (what.add ? clusterApi.addLabel(e.id, what.label) : clusterApi.removeLabel(e.id, what.label));
        done++;
      } catch (err) {
        errors.set(e.id, asError(err).message);
      }
    }
  }
  return { running: null, errors, failure, done };
}

function BulkBar({ count, run, busy }: { count: number; run: (w: BulkWhat) => void; busy: boolean }) {
  const [label, setLabel] = useState("");
  const off = busy || count === 0;
  const act = (action: BulkAction, confirmText?: string) => () => {
    if (confirmText && !window.confirm(confirmText)) return;
    run({ kind: "action", action });
  };
  return (
    <div class="toolbar bulk-bar" data-testid="bulk-bar">
      <span class="muted" data-testid="selected-count">{count ? `${count} selected` : "Select experiments for bulk actions"}</span>
      <button class="small secondary" disabled={off} onClick={act("activate")}>Activate</button>
      <button class="small secondary" disabled={off} onClick={act("pause")}>Pause</button>
      <button class="small secondary" disabled={off} onClick={act("cancel", `Cancel ${count} experiment(s)?`)}>Cancel</button>
      <button class="small danger" data-testid="bulk-kill" disabled={off} onClick={act("kill", `Kill ${count} experiment(s)?`)}>Kill</button>
      <button class="small secondary" disabled={off} onClick={act("archive")}>Archive</button>
      <button class="small secondary" disabled={off} onClick={act("unarchive")}>Unarchive</button>
      <input class="small" placeholder="Label" value={label} onInput={(e) => setLabel(e.currentTarget.value)} aria-label="Bulk label" />
      <button class="small secondary" disabled={off || !label.trim()} onClick={() => run({ kind: "label", add: true, label: label.trim() })}>Add label</button>
      <button class="small secondary" disabled={off || !label.trim()} onClick={() => run({ kind: "label", add: false, label: label.trim() })}>Remove label</button>
      <button class="small secondary" data-testid="bulk-tensorboard" disabled={off} onClick={() => run({ kind: "tensorboard" })}>TensorBoard</button>
    </div>
  );
}

function BulkSummary({ outcome }: { outcome: BulkOutcome }) {
  if (outcome.failure && outcome.done === 0) return <ErrorBanner error={outcome.failure} />;
  const failed = outcome.errors.size;
  return (
    <div class={`banner ${failed ? "warn" : "info"}`} data-testid="bulk-result">
      <span>
        {outcome.done} succeeded{failed ? `, ${failed} failed: ` : "."}
        {failed > 0 && [...outcome.errors].map(([id, why]) => `experiment ${id}: ${why}`).join("; ")}
      </span>
    </div>
  );
}
