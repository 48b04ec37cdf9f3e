// Client-side routing with real URLs (History API). Upstream's UI lived under /det/; links kept
// from it (/det/experiments/3) are rewritten to the same page here (/experiments/3) on load, and
// the master serves index.html for both (crates/master/src/http/webui.rs).

import { useEffect, useState } from "preact/hooks";

const UPSTREAM_PREFIX = "/det";

/** The current path without upstream's /det prefix (rewriting the address bar's). */
export function currentPath(): string {
  const p = window.location.pathname;
  if (p === UPSTREAM_PREFIX || p.startsWith(UPSTREAM_PREFIX + "/")) {
    const rest = p.slice(UPSTREAM_PREFIX.length) || "/";
    window.history.replaceState(null, "", rest + window.location.search + window.location.hash);
    return rest;
  }
  return p;
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  if (replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  listeners.forEach((f) => f());
  window.scrollTo(0, 0);
}

window.addEventListener("popstate", () => listeners.forEach((f) => f()));

export interface Location { path: string; query: URLSearchParams }

export function useLocation(): Location {
  const [, setTick] = useState(0);
  useEffect(() => {
    const f = () => setTick((t) => t + 1);
    listeners.add(f);
    return () => {
      listeners.delete(f);
    };
  }, []);
  return { path: currentPath(), query: new URLSearchParams(window.location.search) };
}

/** Replaces the query string (filters, page) without a new history entry per keystroke. */
export function setQuery(params: Record<string, string | undefined>): void {
  const q = new URLSearchParams(window.location.search);
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === "") q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  navigate(window.location.pathname + (s ? `?${s}` : ""), true);
}

/** `pattern` like `/experiments/:id/trials/:trial` (a trailing `/*` accepts any tab segment). */
export function match(pattern: string, path: string): Record<string, string> | null {
  const wildcard = pattern.endsWith("/*");
  const pp = (wildcard ? pattern.slice(0, -2) : pattern).split("/").filter(Boolean);
  const xs = path.split("/").filter(Boolean);
  if (xs.length < pp.length || (!wildcard && xs.length !== pp.length) || (wildcard && xs.length > pp.length + 1)) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < pp.length; i++) {
    const p = pp[i]!;
    const x = decodeURIComponent(xs[i]!);
    if (p.startsWith(":")) out[p.slice(1)] = x;
    else if (p !== x) return null;
  }
  return out;
}

/** An <a> that navigates without a reload (modifier clicks keep the browser's behaviour). */
export function Link(props: { href: string; class?: string; children: preact.ComponentChildren; title?: string }) {
  return (
    <a
      href={props.href}
      class={props.class}
      title={props.title}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}
