// The shell: session check, routes, navigation. Routes (upstream-like paths; /det/… too, see
// router.tsx): /login, /logout, /dashboard, /experiments, /projects/:id/experiments,
// /experiments/:id[/tab], /experiments/:e/trials/:t[/tab], /tasks, /clusters, /admin/users;
// anything else is the not-found page. /docs/rest-api/ (Swagger UI) is its own page, not the app's.
// Pages are separate chunks (lazy.tsx). The page is drawn, and its requests start, while
// `/api/v1/me` is still in flight: a signed-out visit ends on /login either way (the page's own
// requests answer 401 too).

import { useEffect, useState } from "preact/hooks";
import { api, ApiError, forgetConditional, onUnauthenticated, prefetch, type User } from "./api";
import { ErrorBanner, NotFound, Spinner } from "./components/ui";
import { lazy } from "./lazy";
import { Login } from "./pages/Login";
import { experimentsFilter, experimentsView } from "./pages/experimentsQuery";
import { currentPath, Link, match, navigate, useLocation } from "./router";
import { currentUser, setUser, useUser } from "./session";

const Dashboard = lazy(() => import("./pages/Dashboard").then((m) => m.Dashboard));
const Experiment = lazy(() => import("./pages/Experiment").then((m) => m.Experiment));
const Experiments = lazy(() => import("./pages/Experiments").then((m) => m.Experiments));
const Trial = lazy(() => import("./pages/Trial").then((m) => m.Trial));
const AdminUsers = lazy(() => import("./pages/Admin").then((m) => m.AdminUsers));
const Cluster = lazy(() => import("./pages/Cluster").then((m) => m.Cluster));
const Tasks = lazy(() => import("./pages/Tasks").then((m) => m.Tasks));

// The first reads start when the entry runs, before the first render: effects run only after
// the first paint (a frame or more later; 100–170 ms on a loaded machine), and the page's code
// chunk is still on its way. `/api/v1/me` is taken by the App's first effect; the experiments
// list's first page is taken by that page's first read (api.ts, `prefetch`).
let firstMe: Promise<User> | undefined = api.me();
firstMe.catch(() => undefined);
startFirstPageRead(currentPath(), new URLSearchParams(window.location.search));

function startFirstPageRead(path: string, query: URLSearchParams) {
  const p = path.replace(/\/+$/, "") || "/";
  const project = match("/projects/:id/experiments", p);
  if (p === "/experiments" || (project && isId(project.id)))
    prefetch(api.experimentsPath(experimentsFilter(experimentsView(query), project ? Number(project.id) : undefined)));
}

function toLogin(expired: boolean) {
  const here = window.location.pathname + window.location.search;
  if (window.location.pathname === "/login") return;
  const q = new URLSearchParams();
  if (here !== "/" && here !== "/logout") q.set("next", here);
  if (expired) q.set("expired", "1");
  const s = q.toString();
  navigate(`/login${s ? `?${s}` : ""}`, true);
}

export function App() {
  const loc = useLocation();
  const user = useUser();
  const [bootError, setBootError] = useState<ApiError | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const me = firstMe ?? api.me();
    firstMe = undefined; // a retry asks again
    me
      .then((u) => setUser(u))
      .catch((e) => {
        if (e instanceof ApiError && e.kind === "unauthenticated") {
          setUser(null);
          toLogin(false);
        } else setBootError(e instanceof ApiError ? e : new ApiError("server", String(e)));
      });
  }, [attempt]);

  // Any call that finds the session gone (expired, logged out elsewhere) returns to /login.
  // A first visit without a session is not "expired": only a signed-in user's session ends.
  useEffect(() => onUnauthenticated(() => {
    const hadSession = !!currentUser();
    setUser(null);
    toLogin(hadSession);
  }), []);

  if (loc.path === "/login") {
    if (user) {
      navigate("/dashboard", true);
      return null;
    }
    return <Login next={loc.query.get("next")} expired={loc.query.get("expired") === "1"} />;
  }
  if (loc.path === "/logout") return <Logout />;
  if (bootError)
    return <div class="content"><ErrorBanner error={bootError} retry={() => { setBootError(null); setAttempt((a) => a + 1); }} /></div>;
  if (user === null) return <Spinner label="Redirecting to sign in…" />;

  return (
    <div class="shell">
      <aside class="nav">
        <div class="brand"><span class="logo">R</span>Resolute</div>
        <NavLink href="/dashboard" path={loc.path}>Dashboard</NavLink>
        <NavLink href="/experiments" path={loc.path}>Experiments</NavLink>
        <NavLink href="/tasks" path={loc.path}>Tasks</NavLink>
        <NavLink href="/clusters" path={loc.path}>Cluster</NavLink>
        {user?.admin && <NavLink href="/admin/users" path={loc.path}>Admin</NavLink>}
        <a href="/docs/rest-api/" class="nav-link">API docs</a>
        <div class="nav-spacer" />
        {user && (
          <div class="nav-user" data-testid="current-user">
            <div class="avatar">{(user.displayName || user.username).charAt(0).toUpperCase()}</div>
            <div>
              <div>{user.displayName || user.username}</div>
              <Link href="/logout" class="small">Sign out</Link>
            </div>
          </div>
        )}
      </aside>
      <main class="content">{page(loc)}</main>
    </div>
  );
}

function page(loc: ReturnType<typeof useLocation>) {
  const p = loc.path.replace(/\/+$/, "") || "/";
  if (p === "/") {
    navigate("/dashboard", true);
    return null;
  }
  if (p === "/dashboard") return <Dashboard />;
  if (p === "/experiments") return <Experiments loc={loc} />;
  if (p === "/tasks") return <Tasks loc={loc} />;
  if (p === "/clusters" || p === "/cluster") return <Cluster />;
  if (p === "/admin" || p === "/admin/users") return <AdminUsers />;
  let m = match("/projects/:id/experiments", p);
  if (m) return <Experiments loc={loc} projectId={Number(m.id)} />;
  m = match("/experiments/:e/trials/:t/*", p);
  if (m && isId(m.e) && isId(m.t)) return <Trial experimentId={Number(m.e)} trialId={Number(m.t)} />;
  m = match("/experiments/:id/*", p);
  if (m && isId(m.id)) return <Experiment id={Number(m.id)} />;
  return <NotFound />;
}

function isId(s: string | undefined): boolean {
  return !!s && /^[0-9]{1,9}$/.test(s);
}

function NavLink({ href, path, children }: { href: string; path: string; children: string }) {
  const active = path === href || path.startsWith(href + "/");
  return <Link href={href} class={`nav-link${active ? " active" : ""}`}>{children}</Link>;
}

function Logout() {
  const [error, setError] = useState<ApiError | null>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    api
      .logout()
      .then(() => {
        forgetConditional();
        setUser(null);
        navigate("/login", true);
      })
      .catch((e) => {
        // Already signed out: nothing to end.
        if (e instanceof ApiError && e.kind === "unauthenticated") {
          setUser(null);
          navigate("/login", true);
        } else setError(e instanceof ApiError ? e : new ApiError("server", String(e)));
      });
  }, [attempt]);
  if (error)
    return (
      <div class="content">
        <ErrorBanner error={new ApiError(error.kind, `Signing out failed: ${error.message}`)} retry={() => { setError(null); setAttempt((a) => a + 1); }} />
        <Link href="/dashboard">Back to the dashboard</Link>
      </div>
    );
  return <Spinner label="Signing out…" />;
}
