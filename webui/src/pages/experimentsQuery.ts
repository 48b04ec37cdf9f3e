// What the experiments list (/experiments, /projects/:id/experiments) asks the master for, read
// from the URL's query string. Its own small module in the entry chunk: the page (its own lazy
// chunk) and the entry's prefetch (App.tsx) build the same request from the same URL, so the
// prefetched answer is the one the page asks for.

import type { ExperimentFilter, ExperimentState, SortBy } from "../api";

export const PAGE_SIZE = 20;
export const STATES: ExperimentState[] = ["STATE_ACTIVE", "STATE_PAUSED", "STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED"];
export const SORTS: SortBy[] = ["SORT_BY_ID", "SORT_BY_NAME", "SORT_BY_START_TIME", "SORT_BY_END_TIME", "SORT_BY_STATE", "SORT_BY_PROGRESS", "SORT_BY_USER"];

/** The list's view as the URL states it (filters, sort, page), with defaults filled in. */
export interface ExperimentsView {
  state: ExperimentState | ""; user: string; name: string; label: string;
  sortBy: SortBy; orderBy: "ORDER_BY_ASC" | "ORDER_BY_DESC"; page: number; archived: boolean;
}

export function experimentsView(q: URLSearchParams): ExperimentsView {
  const sortParam = q.get("sort") as SortBy | null;
  return {
    state: (q.get("state") ?? "") as ExperimentState | "",
    user: q.get("user") ?? "",
    name: q.get("name") ?? "",
    label: q.get("label") ?? "",
    sortBy: sortParam && SORTS.includes(sortParam) ? sortParam : "SORT_BY_ID",
    orderBy: q.get("order") === "asc" ? "ORDER_BY_ASC" : "ORDER_BY_DESC",
    page: Math.max(1, Number.parseInt(q.get("page") ?? "1", 10) || 1),
    archived: q.get("archived") === "1",
  };
}

/** The master's filter for one page of that view. */
export function experimentsFilter(v: ExperimentsView, projectId?: number): ExperimentFilter {
  return {
    states: v.state ? [v.state] : undefined,
    users: v.user ? [v.user] : undefined,
    name: v.name || undefined,
    labels: v.label ? [v.label] : undefined,
    sortBy: v.sortBy,
    orderBy: v.orderBy,
    offset: (v.page - 1) * PAGE_SIZE,
    limit: PAGE_SIZE,
    archived: v.archived ? undefined : false,
    projectId,
  };
}
