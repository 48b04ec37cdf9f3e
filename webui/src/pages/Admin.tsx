// /admin/users: the cluster's users for admins (GET /api/v1/users): create (POST /api/v1/users),
// deactivate/activate and grant/revoke admin (PATCH /api/v1/users/{id}), reset a password
// (POST /api/v1/users/{id}/password). Others get the 403 page; the master refuses them anyway.

import { useState } from "preact/hooks";
import { ApiError, clusterApi, type User } from "../api";
import { useResource } from "../components/data";
import { Card, ErrorBanner, ErrorView, PageHeader, Spinner } from "../components/ui";
import { useUser } from "../session";

export function AdminUsers() {
  const me = useUser();
  if (me && !me.admin)
    return <ErrorView error={new ApiError("forbidden", "Only administrators manage users.", 403)} what="User management" />;
  return <UsersPage me={me ?? null} />;
}

function UsersPage({ me }: { me: User | null }) {
  const [refresh, setRefresh] = useState(0);
  const users = useResource((signal) => clusterApi.users(signal), [], { refreshKey: refresh });
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [form, setForm] = useState({ username: "", password: "", admin: false });

  const act = async (f: () => Promise<unknown>, done: string) => {
    setError(null);
    setNotice(null);
    try {
      await f();
      setNotice(done);
      setRefresh((n) => n + 1);
      return true;
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError("server", String(e)));
      return false;
    }
  };

  return (
    <div>
      <PageHeader title="Users" />
      {error && <ErrorBanner error={error} />}
      {notice && <div class="banner info" data-testid="admin-notice">{notice}</div>}
      <Card title="Create a user">
        <form
          class="toolbar"
          data-testid="create-user"
          onSubmit={async (e) => {
            e.preventDefault();
            const name = form.username.trim();
            if (!name) {
              setError(new ApiError("bad-request", "username: required"));
              return;
            }
            if (await act(() => clusterApi.createUser(name, form.password, form.admin), `Created user ${name}.`)) setForm({ username: "", password: "", admin: false });
          }}
        >
          <input name="new-username" placeholder="Username" value={form.username} onInput={(e) => setForm({ ...form, username: e.currentTarget.value })} aria-label="New username" />
          <input name="new-password" type="password" placeholder="Password" value={form.password} onInput={(e) => setForm({ ...form, password: e.currentTarget.value })} aria-label="New password" />
          <label class="check"><input type="checkbox" checked={form.admin} onChange={(e) => setForm({ ...form, admin: e.currentTarget.checked })} /> Admin</label>
          <button type="submit">Create user</button>
        </form>
      </Card>
      <Card>
        {users.error && <ErrorView error={users.error} retry={users.reload} what="Users" />}
        {users.data ? (
          <table class="table" data-testid="users-table">
            <thead><tr><th>ID</th><th>Username</th><th>Display name</th><th>Role</th><th>Status</th><th /></tr></thead>
            <tbody>
              {users.data.map((u) => (
                <tr key={u.id} data-username={u.username}>
                  <td>{u.id}</td>
                  <td><strong>{u.username}</strong></td>
                  <td>{u.displayName || "—"}</td>
                  <td>{u.admin ? "Admin" : "User"}</td>
                  <td><span class={`badge tone-${u.active ? "ok" : "idle"}`} data-testid="user-status">{u.active ? "Active" : "Deactivated"}</span></td>
                  <td class="actions-cell">
                    <button class="small secondary" data-testid="toggle-active" disabled={me?.id === u.id}
                      onClick={() => act(() => clusterApi.patchUser(u.id, { active: !u.active }), `${u.active ? "Deactivated" : "Activated"} ${u.username}.`)}>
                      {u.active ? "Deactivate" : "Activate"}
                    </button>
                    <button class="small secondary" data-testid="toggle-admin" disabled={me?.id === u.id}
                      onClick={() => act(() => clusterApi.patchUser(u.id, { admin: !u.admin }), `${u.username} is ${u.admin ? "no longer" : "now"} an admin.`)}>
                      {u.admin ? "Remove admin" : "Make admin"}
                    </button>
                    <button class="small secondary" data-testid="reset-password"
                      onClick={() => {
                        const pw = window.prompt(`New password for ${u.username}`);
                        if (pw !== null) void act(() => clusterApi.setPassword(u.id, pw), `Set the password of ${u.username}.`);
                      }}>
                      Reset password
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : !users.error && <Spinner />}
      </Card>
    </div>
  );
}
