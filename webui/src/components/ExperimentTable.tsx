// The experiments table shared by the dashboard and the experiments list.

import type { Experiment, SortBy } from "../api";
import { Link } from "../router";
import { DASH, fmtDuration, fmtNumber, fmtTime } from "./format";
import { Progress, StateBadge } from "./ui";

export interface Column { key: string; label: string; sort?: SortBy }

export const COLUMNS: Column[] = [
  { key: "id", label: "ID", sort: "SORT_BY_ID" },
  { key: "name", label: "Name", sort: "SORT_BY_NAME" },
  { key: "state", label: "State", sort: "SORT_BY_STATE" },
  { key: "progress", label: "Progress", sort: "SORT_BY_PROGRESS" },
  { key: "searcher", label: "Searcher" },
  { key: "trials", label: "Trials" },
  { key: "user", label: "User", sort: "SORT_BY_USER" },
  { key: "start", label: "Started", sort: "SORT_BY_START_TIME" },
  { key: "duration", label: "Duration" },
];

export function ExperimentTable(props: {
  experiments: Experiment[];
  sortBy?: SortBy;
  orderBy?: string;
  onSort?: (s: SortBy) => void;
  compact?: boolean;
  /** Row selection for bulk actions (the experiments page): a checkbox column when given. */
  selected?: Set<number>;
  onSelect?: (ids: number[], on: boolean) => void;
  /** A bulk action's failure per experiment, shown in its row. */
  rowErrors?: Map<number, string>;
}) {
  const sel = props.selected;
  const allOn = !!sel && props.experiments.length > 0 && props.experiments.every((e) => sel.has(e.id));
  const cols = props.compact ? COLUMNS.filter((c) => ["id", "name", "state", "progress", "user", "start"].includes(c.key)) : COLUMNS;
  return (
    <table class="table" data-testid="experiments-table">
      <thead>
        <tr>
          {sel && (
            <th class="select-cell">
              <input type="checkbox" aria-label="Select all" data-testid="select-all" checked={allOn}
                onChange={(e) => props.onSelect?.(props.experiments.map((x) => x.id), e.currentTarget.checked)} />
            </th>
          )}
          {cols.map((c) => {
            const active = c.sort && c.sort === props.sortBy;
            return (
              <th key={c.key} class={c.sort && props.onSort ? "sortable" : ""} onClick={() => c.sort && props.onSort?.(c.sort)}>
                {c.label}
                {active && <span class="sort-arrow">{props.orderBy === "ORDER_BY_ASC" ? " ▲" : " ▼"}</span>}
              </th>
            );
          })}
        </tr>
      </thead>
      <tbody>
        {props.experiments.length === 0 && (
          <tr><td colSpan={cols.length + (sel ? 1 : 0)} class="empty-row">No experiments match.</td></tr>
        )}
        {props.experiments.map((e) => {
          const failed = props.rowErrors?.get(e.id);
          return (
            <tr key={e.id} data-experiment-id={e.id} class={failed ? "row-failed" : undefined}>
              {sel && (
                <td class="select-cell">
                  <input type="checkbox" aria-label={`Select experiment ${e.id}`} data-testid="select-row" checked={sel.has(e.id)}
                    onChange={(ev) => props.onSelect?.([e.id], ev.currentTarget.checked)} />
                </td>
              )}
              {cols.map((c) => (
                <td key={c.key}>
                  {cell(c.key, e)}
                  {c.key === "name" && failed && <div class="row-error" data-testid="row-error">{failed}</div>}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function cell(key: string, e: Experiment) {
  switch (key) {
    case "id": return <Link href={`/experiments/${e.id}`}>{e.id}</Link>;
    case "name":
      return (
        <span>
          <Link href={`/experiments/${e.id}`} class="strong">{e.name || `Experiment ${e.id}`}</Link>
          {e.labels?.map((l) => <span class="label" key={l}>{l}</span>)}
          {e.archived && <span class="label muted-label">archived</span>}
        </span>
      );
    case "state": return <StateBadge state={e.state} />;
    case "progress": return <Progress value={e.progress} />;
    case "searcher": return e.searcherType || DASH;
    case "trials": return fmtNumber(e.numTrials);
    case "user": return e.username || DASH;
    case "start": return fmtTime(e.startTime);
    case "duration": return fmtDuration(e.startTime, e.endTime);
    default: return DASH;
  }
}
