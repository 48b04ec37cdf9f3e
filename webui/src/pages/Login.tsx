// /login: the same session as the API (POST /api/v1/auth/login sets the `auth` cookie).

import { useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { navigate } from "../router";
import { setUser } from "../session";

/** Only same-site paths are followed after login (never another origin). */
function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login") ? next : "/dashboard";
}

export function Login({ next, expired }: { next: string | null; expired: boolean }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!username.trim()) {
      setError("Enter your username.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const r = await api.login(username.trim(), password);
      setUser(r.user);
      navigate(safeNext(next), true);
    } catch (err) {
      if (err instanceof ApiError && err.kind === "unauthenticated") setError("Invalid username or password.");
      else if (err instanceof ApiError) setError(err.message);
      else setError(String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="login-page">
      <form class="login-card" onSubmit={submit} data-testid="login-form">
        <div class="brand big-brand"><span class="logo">R</span>Resolute</div>
        <p class="muted">Sign in to your cluster</p>
        {expired && !error && <div class="banner warn">Your session has ended. Sign in again.</div>}
        {error && <div class="banner bad" role="alert">{error}</div>}
        <label>Username
          <input name="username" autoComplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} autoFocus />
        </label>
        <label>Password
          <input name="password" type="password" autoComplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      </form>
    </div>
  );
}
