// Loading and live updates. `useResource` loads once and, while `live(data)` says the object is
// still changing (a running experiment), polls every `intervalMs` — only while the tab is visible.
// Polling was chosen over a push stream for this round (ARCHITECTURE.md, webui): the master has no
// event stream yet, every page's data is a bounded, downsampled request, and polling survives
// master restarts and proxies without reconnect logic. `refreshKey`: a value whose change reloads
// without forgetting the data (e.g. the experiment's state, so dependent lists fetch once more
// after it ends and polling stops). A key's first value (undefined → the owner's state once the
// owner loaded) is no change: the load already in flight is that fresh, and reloading then made
// every dependent list load twice on first render.

import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../api";

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

export function useResource<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
  opts: { intervalMs?: number; live?: (data: T) => boolean; refreshKey?: unknown } = {},
): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const optsRef = useRef(opts);
  optsRef.current = opts;
  // Counts changes of a known refreshKey; the effect below reloads on it, not on the key itself.
  const lastKey = useRef(opts.refreshKey);
  const refreshes = useRef(0);
  if (opts.refreshKey !== lastKey.current) {
    if (lastKey.current !== undefined) refreshes.current++;
    lastKey.current = opts.refreshKey;
  }

  // A new identity (deps changed): forget the old object.
  useEffect(() => {
    setData(undefined);
    setError(undefined);
    setLoading(true);
  }, deps);

  useEffect(() => {
    const ctrl = new AbortController();
    let timer: number | undefined;
    const run = async () => {
      try {
        const d = await loadRef.current(ctrl.signal);
        if (ctrl.signal.aborted) return;
        setData(d);
        setError(undefined);
        setLoading(false);
        const { intervalMs, live } = optsRef.current;
        if (intervalMs && live?.(d)) timer = window.setTimeout(poll, intervalMs);
      } catch (e) {
        if (ctrl.signal.aborted) return;
        setError(e instanceof ApiError ? e : new ApiError("server", String(e)));
        setLoading(false);
        // A network error keeps retrying in the background; the banner offers a retry now.
        if (e instanceof ApiError && e.kind === "network") timer = window.setTimeout(poll, 5000);
      }
    };
    const poll = () => {
      if (document.visibilityState === "hidden") {
        timer = window.setTimeout(poll, 1000);
        return;
      }
      void run();
    };
    void run();
    return () => {
      ctrl.abort();
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, [...deps, tick, refreshes.current]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}
