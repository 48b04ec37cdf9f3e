// Logs of one trial or of many interleaved (the experiment page's Logs tab): the last lines, then
// (when following a live trial) every new line as the master streams it
// (GET /api/v1/trials/:id/logs?follow=true, newline-delimited JSON). Level filter and search are
// the master's own filters; the view keeps at most MAX_LINES lines. With several trials each line
// names its trial and lines are ordered by time: trials that ended send their last
// TAIL_LINES / n lines (ORDER_BY_DESC + limit, a few requests at a time), live ones are followed —
// at most MAX_STREAMS at once, since a browser holds only ~6 connections per host (HTTP/1.1) and
// the page's polls need theirs.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, streamTrialLogs, type LogLine } from "../api";
import { fmtTime } from "./format";
import { ErrorBanner } from "./ui";

const MAX_LINES = 5000;
/** Lines of all trials together when many are shown (each trial gets at least MIN_TAIL). */
export const TAIL_LINES = 5000;
const MIN_TAIL = 20;
/** Live trials followed at once when many are shown. */
export const MAX_STREAMS = 3;
/** Requests for ended trials' tails in flight at once. */
const TAIL_CONCURRENCY = 3;
const LEVELS = ["LOG_LEVEL_TRACE", "LOG_LEVEL_DEBUG", "LOG_LEVEL_INFO", "LOG_LEVEL_WARNING", "LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"];

/** A trial whose logs are shown; `live` ones are followed. */
export interface LogSource { id: number; live: boolean }

/** A line with the trial it came from. */
type TrialLine = LogLine & { trial: number };

/** One trial's logs (the trial page). */
export function Logs({ trialId, live }: { trialId: number; live: boolean }) {
  return <LogView sources={[{ id: trialId, live }]} fileName={`trial-${trialId}-logs.txt`} />;
}

/** Lines ordered by time (stable: a trial's own order is kept for equal times), newest MAX_LINES. */
function merge(old: TrialLine[], batch: TrialLine[], many: boolean): TrialLine[] {
  let next = old.concat(batch);
  if (many) next = next.map((l, i) => [l, i] as const).sort((a, b) => (a[0].timestamp < b[0].timestamp ? -1 : a[0].timestamp > b[0].timestamp ? 1 : a[1] - b[1])).map(([l]) => l);
  return next.length > MAX_LINES ? next.slice(next.length - MAX_LINES) : next;
}

export function LogView({ sources, fileName }: { sources: LogSource[]; fileName: string }) {
  const [lines, setLines] = useState<TrialLine[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const [follow, setFollow] = useState(true);
  const [minLevel, setMinLevel] = useState("");
  const [search, setSearch] = useState("");
  const [searchApplied, setSearchApplied] = useState("");
  const [streaming, setStreaming] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const many = sources.length > 1;
  const anyLive = sources.some((s) => s.live);
  const key = sources.map((s) => `${s.id}${s.live ? "+" : ""}`).join(",");
  const followed = follow ? sources.filter((s) => s.live).slice(0, many ? MAX_STREAMS : 1) : [];
  const unfollowed = follow ? sources.filter((s) => s.live).length - followed.length : 0;

  useEffect(() => {
    const t = window.setTimeout(() => setSearchApplied(search), 400);
    return () => window.clearTimeout(t);
  }, [search]);

  useEffect(() => {
    const ctrl = new AbortController();
    setLines([]);
    setError(null);
    const levels = minLevel ? LEVELS.slice(LEVELS.indexOf(minLevel)) : undefined;
    const searchText = searchApplied || undefined;
    const followIds = new Set(followed.map((s) => s.id));
    setStreaming(followIds.size > 0);
    const add = (trial: number) => (batch: LogLine[]) => setLines((old) => merge(old, batch.map((l) => ({ ...l, trial })), many));
    const fail = (e: unknown) => {
      if (ctrl.signal.aborted) return;
      setStreaming(false);
      setError(e instanceof ApiError ? e : new ApiError("network", "The log stream was interrupted."));
    };
    // Followed trials: their whole log, then new lines as they come.
    const streams = Array.from(followIds).map((id) => streamTrialLogs(id, { follow: true, levels, searchText }, add(id), ctrl.signal));
    // The rest: one trial's whole log, or each trial's tail (newest first, so reversed).
    const rest = sources.filter((s) => !followIds.has(s.id));
    const tail = many ? Math.max(MIN_TAIL, Math.floor(TAIL_LINES / sources.length)) : undefined;
    const tails = (async () => {
      for (let i = 0; i < rest.length && !ctrl.signal.aborted; i += TAIL_CONCURRENCY) {
        await Promise.all(rest.slice(i, i + TAIL_CONCURRENCY).map((s) => {
          const collected: LogLine[] = [];
          return streamTrialLogs(s.id, { follow: false, levels, searchText, limit: tail, orderBy: tail ? "ORDER_BY_DESC" : undefined }, (b) => (tail ? collected.push(...b) : add(s.id)(b)), ctrl.signal)
            .then(() => tail && add(s.id)(collected.reverse()));
        }));
      }
    })();
    Promise.all([...streams, tails])
      .then(() => !ctrl.signal.aborted && setStreaming(false))
      .catch(fail);
    return () => ctrl.abort();
  }, [key, follow, minLevel, searchApplied, attempt]);

  useEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  const download = () => {
    const text = lines.map((l) => `${many ? `[trial ${l.trial}] ` : ""}${l.message ?? l.log ?? ""}`).join(lines.length ? "\n" : "");
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = fileName;
    a.click();
    URL.revokeObjectURL(url);
  };

  return (
    <div>
      <div class="toolbar">
        <label>Level{" "}
          <select value={minLevel} onChange={(e) => setMinLevel(e.currentTarget.value)} data-testid="log-level">
            <option value="">All</option>
            {LEVELS.map((l) => <option key={l} value={l}>{l.replace("LOG_LEVEL_", "").toLowerCase()} and above</option>)}
          </select>
        </label>
        <input placeholder="Search logs…" value={search} onInput={(e) => setSearch(e.currentTarget.value)} aria-label="Search logs" data-testid="log-search" />
        {anyLive && <label class="check"><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} data-testid="log-follow" /> Follow</label>}
        <span class={streaming ? "live small" : "muted small"} data-testid="log-status">{streaming ? "● Live" : `${lines.length} lines`}</span>
        <button class="small secondary" onClick={download} disabled={!lines.length} data-testid="log-download">Download</button>
      </div>
      {many && tailNote(sources.length, unfollowed)}
      {error && <ErrorBanner error={error} retry={() => setAttempt((a) => a + 1)} />}
      <div
        class="logs"
        ref={box}
        data-testid="logs"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.length === 0 && <div class="muted">{streaming ? "Waiting for log lines…" : "No log lines."}</div>}
        {lines.map((l) => (
          <div class={`log-line lvl-${(l.level ?? "").replace("LOG_LEVEL_", "").toLowerCase()}`} key={`${l.trial}/${l.id}`} data-trial-id={l.trial}>
            <span class="log-time">{fmtTime(l.timestamp)}</span>
            {many && <span class="log-trial">trial {l.trial}</span>}
            <span class="log-msg">{stripPrefix(l.message ?? l.log ?? "")}</span>
          </div>
        ))}
      </div>
    </div>
  );
}

function tailNote(trials: number, unfollowed: number) {
  const tail = Math.max(MIN_TAIL, Math.floor(TAIL_LINES / trials));
  return (
    <p class="muted small" data-testid="log-note">
      The last {tail} lines of each of {trials} trials, by time{unfollowed > 0 ? `; following ${MAX_STREAMS} live trials (${unfollowed} more: pick one to follow it)` : ""}.
    </p>
  );
}

/** The master prefixes each message with `[timestamp] container ||`; the view shows the time itself. */
function stripPrefix(m: string): string {
  return m.replace(/^\[[^\]]*\]\s+\S+\s+\|\|\s?/, "").replace(/\n$/, "");
}
