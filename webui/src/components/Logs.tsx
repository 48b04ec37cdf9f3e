// A trial's logs: the last lines, then (when following a live trial) every new line as the master
// streams it (GET /api/v1/trials/:id/logs?follow=true, newline-delimited JSON). Level filter and
// search are the master's own filters; the view keeps at most MAX_LINES lines.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, streamTrialLogs, type LogLine } from "../api";
import { fmtTime } from "./format";
import { ErrorBanner } from "./ui";

const MAX_LINES = 5000;
const LEVELS = ["LOG_LEVEL_TRACE", "LOG_LEVEL_DEBUG", "LOG_LEVEL_INFO", "LOG_LEVEL_WARNING", "LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"];

export function Logs({ trialId, live }: { trialId: number; live: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const [follow, setFollow] = useState(true);
  const [minLevel, setMinLevel] = useState("");
  const [search, setSearch] = useState("");
  const [searchApplied, setSearchApplied] = useState("");
  const [streaming, setStreaming] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    const t = window.setTimeout(() => setSearchApplied(search), 400);
    return () => window.clearTimeout(t);
  }, [search]);

  useEffect(() => {
    const ctrl = new AbortController();
    setLines([]);
    setError(null);
    const levels = minLevel ? LEVELS.slice(LEVELS.indexOf(minLevel)) : undefined;
    const following = follow && live;
    setStreaming(following);
    streamTrialLogs(
      trialId,
      { follow: following, levels, searchText: searchApplied || undefined },
      (batch) => setLines((old) => {
        const next = old.concat(batch);
        return next.length > MAX_LINES ? next.slice(next.length - MAX_LINES) : next;
      }),
      ctrl.signal,
    )
      .then(() => !ctrl.signal.aborted && setStreaming(false))
      .catch((e) => {
        if (ctrl.signal.aborted) return;
        setStreaming(false);
        setError(e instanceof ApiError ? e : new ApiError("network", "The log stream was interrupted."));
      });
    return () => ctrl.abort();
  }, [trialId, follow, live, minLevel, searchApplied, attempt]);

  useEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  const download = () => {
    const text = lines.map((l) => l.message ?? l.log ?? "").join(lines.length ? "\n" : "");
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = `trial-${trialId}-logs.txt`;
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
        <input placeholder="Search logs…" value={search} onInput={(e) => setSearch(e.currentTarget.value)} aria-label="Search logs" />
        {live && <label class="check"><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow</label>}
        <span class={streaming ? "live small" : "muted small"} data-testid="log-status">{streaming ? "● Live" : `${lines.length} lines`}</span>
        <button class="small secondary" onClick={download} disabled={!lines.length}>Download</button>
      </div>
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
          <div class={`log-line lvl-${(l.level ?? "").replace("LOG_LEVEL_", "").toLowerCase()}`} key={l.id}>
            <span class="log-time">{fmtTime(l.timestamp)}</span>
            <span class="log-msg">{stripPrefix(l.message ?? l.log ?? "")}</span>
          </div>
        ))}
      </div>
    </div>
  );
}

/** The master prefixes each message with `[timestamp] container ||`; the view shows the time itself. */
function stripPrefix(m: string): string {
  return m.replace(/^\[[^\]]*\]\s+\S+\s+\|\|\s?/, "").replace(/\n$/, "");
}
