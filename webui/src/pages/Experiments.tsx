// /experiments (and /projects/:id/experiments): server-side paged, filtered and sorted through
// GET /api/v1/experiments. Filters live in the URL's query string, so a filtered view is a link.

import { useEffect, useState } from "preact/hooks";
import { api, type ExperimentState, type SortBy } from "../api";
import { useResource } from "../components/data";
import { ExperimentTable } from "../components/ExperimentTable";
import { isLive } from "../components/format";
import { Card, ErrorView, PageHeader, Spinner } from "../components/ui";
import { setQuery, type Location } from "../router";

const PAGE_SIZE = 20;
const STATES: ExperimentState[] = ["STATE_ACTIVE", "STATE_PAUSED", "STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED"];
const SORTS: SortBy[] = ["SORT_BY_ID", "SORT_BY_NAME", "SORT_BY_START_TIME", "SORT_BY_END_TIME", "SORT_BY_STATE", "SORT_BY_PROGRESS", "SORT_BY_USER"];

export function Experiments({ loc, projectId }: { loc: Location; projectId?: number }) {
  const q = loc.query;
  const state = (q.get("state") ?? "") as ExperimentState | "";
  const user = q.get("user") ?? "";
  const name = q.get("name") ?? "";
  const label = q.get("label") ?? "";
  const sortParam = q.get("sort") as SortBy | null;
  const sortBy: SortBy = sortParam && SORTS.includes(sortParam) ? sortParam : "SORT_BY_ID";
  const orderBy = q.get("order") === "asc" ? "ORDER_BY_ASC" : "ORDER_BY_DESC";
  const page = Math.max(1, Number.parseInt(q.get("page") ?? "1", 10) || 1);
  const archived = q.get("archived") === "1";

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
    (signal) =>
      api.experiments(
        {
          states: state ? [state] : undefined,
          users: user ? [user] : undefined,
          name: name || undefined,
          labels: label ? [label] : undefined,
          sortBy,
          orderBy,
          offset: (page - 1) * PAGE_SIZE,
          limit: PAGE_SIZE,
          archived: archived ? undefined : false,
          projectId,
        },
        signal,
      ),
    [state, user, name, label, sortBy, orderBy, page, archived, projectId],
    { intervalMs: 5000, live: (r) => r.experiments.some((e) => isLive(e.state)) },
  );

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
      <Card>
        {list.error && <ErrorView error={list.error} retry={list.reload} />}
        {list.data ? (
          <ExperimentTable experiments={list.data.experiments} sortBy={sortBy} orderBy={orderBy} onSort={onSort} />
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
