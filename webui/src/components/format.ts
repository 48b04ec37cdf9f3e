// Display helpers: every value the pages show goes through one of these, so a missing field is a
// dash, never "undefined" or "NaN".

export const DASH = "—";

export function fmtNumber(v: unknown, digits = 4): string {
  if (typeof v !== "number" || !Number.isFinite(v)) return DASH;
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return v.toExponential(3).replace(/\.?0+e/, "e");
  return v.toFixed(digits).replace(/\.?0+$/, "");
}

export function fmtValue(v: unknown): string {
  if (v === undefined || v === null) return DASH;
  if (typeof v === "number") return fmtNumber(v);
  if (typeof v === "string") return v || DASH;
  if (typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

export function fmtTime(iso: string | undefined | null): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return DASH;
  return d.toLocaleString("en-GB", { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function fmtDuration(startIso: string | undefined, endIso: string | undefined | null): string {
  if (!startIso) return DASH;
  const start = new Date(startIso).getTime();
  const end = endIso ? new Date(endIso).getTime() : Date.now();
  if (!Number.isFinite(start) || !Number.isFinite(end) || end < start) return DASH;
  let s = Math.round((end - start) / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

/** STATE_STOPPING_COMPLETED → "Stopping completed". */
export function stateLabel(state: string | undefined): string {
  if (!state) return DASH;
  const s = state.replace(/^STATE_/, "").toLowerCase().replace(/_/g, " ");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

const ACTIVE = new Set(["STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING", "STATE_PAUSED",
  "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED", "STATE_STOPPING_COMPLETED", "STATE_STOPPING_ERROR", "STATE_DELETING"]);

/** Still changing: worth polling. */
export function isLive(state: string | undefined): boolean {
  return !!state && ACTIVE.has(state);
}

export function stateTone(state: string | undefined): "ok" | "run" | "warn" | "bad" | "idle" {
  switch (state) {
    case "STATE_COMPLETED": return "ok";
    case "STATE_RUNNING": case "STATE_ACTIVE": case "STATE_STARTING": case "STATE_PULLING": return "run";
    case "STATE_PAUSED": case "STATE_QUEUED": return "warn";
    case "STATE_ERROR": case "STATE_STOPPING_ERROR": case "STATE_DELETE_FAILED": return "bad";
    default: return "idle";
  }
}
