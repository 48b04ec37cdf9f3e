// Pages loaded on first visit: each page is its own chunk (a dynamic `import()`), so the entry
// chunk holds only the shell and starts the page's chunk and `/api/v1/me` at once. `lazy(load)`
// is a component that renders a spinner until its page's module arrived, then the page; a failed
// load (network) shows the retry banner. A module is fetched once and shared by every use. The
// fetch starts on the first render, not in the effect (effects run after the next paint, a frame
// or more later on a busy machine); the effect only waits for that same fetch.

import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api";
import { ErrorBanner, Spinner } from "./components/ui";

export function lazy<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> & { preload: () => void } {
  let loaded: ComponentType<P> | undefined;
  let pending: Promise<ComponentType<P>> | undefined;
  const start = () =>
    (pending ??= load().then(
      (c) => (loaded = c),
      (e) => {
        pending = undefined; // a retry fetches again
        throw e;
      },
    ));

  function Lazy(props: P) {
    const [, setLoaded] = useState(0);
    const [error, setError] = useState<ApiError | null>(null);
    const [attempt, setAttempt] = useState(0);
    if (!loaded && !error) void start().catch(() => undefined);
    useEffect(() => {
      if (loaded) return;
      let live = true;
      start().then(
        () => live && setLoaded((n) => n + 1),
        (e) => live && setError(new ApiError("server", `The page could not be loaded: ${e instanceof Error ? e.message : String(e)}`)),
      );
      return () => {
        live = false;
      };
    }, [attempt]);
    if (loaded) {
      const Page = loaded;
      return <Page {...props} />;
    }
    if (error) return <ErrorBanner error={error} retry={() => { setError(null); setAttempt((a) => a + 1); }} />;
    return <Spinner />;
  }
  return Object.assign(Lazy, { preload: () => void start().catch(() => undefined) });
}
