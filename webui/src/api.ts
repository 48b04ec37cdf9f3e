// The typed API module: every call the UI makes to the master goes through here.
//
// Authentication is the master's `auth` cookie (HttpOnly, set by POST /api/v1/auth/login), the same
// session the REST API uses: the UI never sees or stores the token. Errors are mapped to one type,
// `ApiError`, whose `kind` the pages render: "unauthenticated" (back to /login), "forbidden" (a
// clear message), "not-found" (the not-found page), "network" (a retry banner), "bad-request" and
// "server" (the master's own message). Nothing here returns `undefined` for a field the master
// always sends; optional fields are typed as optional and the pages render a dash for them.

export type ErrorKind = "unauthenticated" | "forbidden" | "not-found" | "network" | "bad-request" | "server";

export class ApiError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean | undefined | null | (string | number)[]>;

/** `?a=1&b=x&b=y` from a record (arrays repeat the key, as grpc-gateway reads them). */
export function queryString(q: Query): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => p.append(k, String(x)));
    else p.append(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : "";
}

/** Listeners told when any call finds the session gone (the app returns to /login). */
const unauthenticatedListeners = new Set<() => void>();
export function onUnauthenticated(f: () => void): () => void {
  unauthenticatedListeners.add(f);
  return () => unauthenticatedListeners.delete(f);
}

async function errorFrom(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    const text = body?.error?.error ?? body?.message;
    if (typeof text === "string" && text) message = text;
  } catch {
    /* not JSON: keep the status line */
  }
  const kind: ErrorKind =
    res.status === 401 ? "unauthenticated"
    : res.status === 403 ? "forbidden"
    : res.status === 404 ? "not-found"
    : res.status >= 500 ? "server"
    : "bad-request";
  return new ApiError(kind, message, res.status);
}

export async function request(method: string, path: string, body?: unknown, signal?: AbortSignal, ifNoneMatch?: string): Promise<Response> {
  let res: Response;
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (ifNoneMatch) headers["If-None-Match"] = ifNoneMatch;
  try {
    res = await fetch(path, {
      method,
      credentials: "same-origin",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError("network", "The master cannot be reached.");
  }
  if (!res.ok && !(res.status === 304 && ifNoneMatch)) {
    const err = await errorFrom(res);
    if (err.kind === "unauthenticated" && !path.startsWith("/api/v1/auth/login")) {
      unauthenticatedListeners.forEach((f) => f());
    }
    throw err;
  }
  return res;
}

/**
 * Conditional reads (`If-None-Match`, ARCHITECTURE.md "Web UI"): the master tags each JSON read
 * with an `ETag`; the last body of each GET URL is kept here with its tag, the next GET of that URL
 * sends the tag, and a `304 Not Modified` returns the kept body — the same object, so a polling
 * page whose data did not change re-renders nothing. Bounded: the oldest URLs are dropped first.
 */
const conditional = new Map<string, { etag: string; body: unknown }>();
const CONDITIONAL_MAX = 200;
/** How many GETs the master answered 304 (read by the end-to-end test). */
export const conditionalStats = { notModified: 0 };

/**
 * Reads started before their page asked for them: the entry starts the first request of the page
 * it is opening (App.tsx) while the page's own code chunk is still loading, and the page's first
 * GET of that exact URL takes the answer in flight instead of asking again. Taken once; an
 * untaken one is dropped after [PREFETCH_TTL_MS], so a later visit always reads afresh.
 */
const prefetched = new Map<string, { at: number; answer: Promise<unknown> }>();
const PREFETCH_TTL_MS = 5000;

export function prefetch(path: string): void {
  const answer = json<unknown>("GET", path);
  answer.catch(() => undefined); // the taker sees the error; an untaken one is not "unhandled"
  prefetched.set(path, { at: performance.now(), answer });
}

function takePrefetched(path: string): Promise<unknown> | undefined {
  const p = prefetched.get(path);
  if (!p) return undefined;
  prefetched.delete(path);
  return performance.now() - p.at <= PREFETCH_TTL_MS ? p.answer : undefined;
}

async function json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  if (method !== "GET") return (await (await request(method, path, body, signal)).json()) as T;
  const early = takePrefetched(path);
  if (early) return (await early) as T;
  const kept = conditional.get(path);
  const res = await request(method, path, undefined, signal, kept?.etag);
  if (res.status === 304 && kept) {
    conditionalStats.notModified++;
    (window as unknown as { __resoluteNotModified?: number }).__resoluteNotModified = conditionalStats.notModified;
    return kept.body as T;
  }
  const parsed = (await res.json()) as T;
  const etag = res.headers.get("ETag");
  conditional.delete(path);
  if (etag) {
    conditional.set(path, { etag, body: parsed });
    if (conditional.size > CONDITIONAL_MAX) conditional.delete(conditional.keys().next().value as string);
  }
  return parsed;
}

/** Forgets kept bodies (after a write whose effect the next read must show, and on sign-out). */
export function forgetConditional(): void {
  conditional.clear();
  prefetched.clear();
}

// ---- wire types (the fields the UI reads; camelCase as the master sends them) ----------------

export type ExperimentState =
  | "STATE_ACTIVE" | "STATE_PAUSED" | "STATE_STOPPING_CANCELED" | "STATE_STOPPING_KILLED"
  | "STATE_STOPPING_COMPLETED" | "STATE_STOPPING_ERROR" | "STATE_CANCELED" | "STATE_COMPLETED"
  | "STATE_ERROR" | "STATE_QUEUED" | "STATE_PULLING" | "STATE_STARTING" | "STATE_RUNNING"
  | "STATE_DELETING" | "STATE_DELETE_FAILED" | "STATE_UNSPECIFIED";

export interface User { id: number; username: string; displayName?: string; admin: boolean; active: boolean }

export interface Experiment {
  id: number; name: string; description: string; labels: string[]; state: ExperimentState;
  startTime: string; endTime?: string; archived: boolean; numTrials: number; trialIds: number[];
  username: string; userId: number; searcherType: string; searcherMetric?: string; progress?: number;
  projectId: number; projectName?: string; workspaceName?: string;
  bestTrialSearcherMetric?: number; bestTrialId?: number; forkedFrom?: number; originalConfig?: string;
}

export interface ExperimentDetail { experiment: Experiment; config: Record<string, unknown> }

export interface Pagination { offset: number; limit: number; startIndex: number; endIndex: number; total: number }

export interface MetricSummary { count?: number; last?: unknown; min?: number; max?: number; type?: string }

export interface Trial {
  id: number; experimentId: number; state: ExperimentState; startTime: string; endTime?: string;
  restarts: number; totalBatchesProcessed: number; hparams?: Record<string, unknown>;
  searcherMetricValue?: number; taskId?: string;
  summaryMetrics?: { avg_metrics?: Record<string, MetricSummary>; validation_metrics?: Record<string, MetricSummary> };
  bestValidation?: { metrics?: Record<string, unknown> };
  latestValidation?: { metrics?: Record<string, unknown> } | null;
}

/** `v1FileNode`: a file or directory of the model definition. */
export interface FileNode { path: string; name: string; modifiedTime: string; contentLength: number; isDir: boolean; contentType: string; files: FileNode[] }
/** A trial's downsampled series as columns (GET /api/v1/trials/time-series/columns). */
export interface SeriesColumns { group: string; batches: number[]; times: number[]; epochs?: (number | null)[]; values: Record<string, (number | null)[]> }
export interface TrialSeriesColumns { trialId: number; metrics: SeriesColumns[] }

export interface Agent {
  id: string; enabled: boolean; draining: boolean; resourcePools?: string[];
  slots?: Record<string, { enabled?: boolean; container?: { state?: string } | null; device?: { type?: string } }>;
  containers?: Record<string, unknown>;
}

export interface LogLine { id: string; timestamp: string; message: string; level?: string; log?: string }

export type SortBy = "SORT_BY_ID" | "SORT_BY_NAME" | "SORT_BY_START_TIME" | "SORT_BY_END_TIME" | "SORT_BY_STATE" | "SORT_BY_PROGRESS" | "SORT_BY_USER";

export interface ExperimentFilter {
  states?: ExperimentState[]; users?: string[]; name?: string; labels?: string[];
  sortBy?: SortBy; orderBy?: "ORDER_BY_ASC" | "ORDER_BY_DESC"; offset?: number; limit?: number; archived?: boolean;
  projectId?: number;
}

// ---- experiment page: hyperparameters, searcher, checkpoints, model definition (webhp) ------------

export interface MetricHpImportance { hpImportance: Record<string, number>; experimentProgress: number; error: string; pending: boolean; inProgress: boolean; trialCount: number }
export interface HpImportance { trainingMetrics: Record<string, MetricHpImportance>; validationMetrics: Record<string, MetricHpImportance> }
export interface SearcherTrial { requestId: number; trialId?: number | null; bracket?: number | null; rung?: number | null; state: string; decision: string; lastMetric?: number | null; timeProgress?: number }
export interface SearcherState { method: string; unit: string; progress: number; status: string; trials: SearcherTrial[]; brackets: { bracket: number; rungs: { rung: number; length: number; plannedTrials: number; recorded?: number | null }[] }[] }
export interface Checkpoint {
  uuid: string; state: string; reportTime?: string; resources: Record<string, string>; metadata: Record<string, unknown>;
  training: { trialId?: number; experimentId?: number; validationMetrics?: { avgMetrics?: Record<string, unknown> } | null; searcherMetric?: number | null };
}
export type CheckpointQuery = { offset?: number; limit?: number; sortByAttr?: string; orderBy?: string; states?: string[] };
export interface Workload { training?: WorkloadMetrics; validation?: WorkloadMetrics; checkpoint?: { uuid: string; state: string; totalBatches: number; endTime?: string; resources?: Record<string, string> } }
export interface WorkloadMetrics { totalBatches: number; endTime?: string; metrics?: { avgMetrics?: Record<string, unknown> } }

// ---- calls ---------------------------------------------------------------------------------------

export const api = {
  login: (username: string, password: string) =>
    json<{ token: string; user: User }>("POST", "/api/v1/auth/login", { username, password, isHashed: false }),
  logout: () => json<unknown>("POST", "/api/v1/auth/logout", {}),
  me: () => json<{ user: User }>("GET", "/api/v1/me").then((r) => r.user),
  master: () => json<{ version: string; clusterName: string; clusterId: string }>("GET", "/api/v1/master"),
  clusterMessage: async (): Promise<string | null> => {
    // The endpoint arrives with the cluster-message work; before it exists, there is no message.
    try {
      const r = await json<{ clusterMessage?: { message?: string } | null }>("GET", "/api/v1/master/cluster_message");
      return r.clusterMessage?.message || null;
    } catch (e) {
      if (e instanceof ApiError && (e.kind === "not-found" || e.kind === "forbidden")) return null;
      throw e;
    }
  },
  experimentsPath: (f: ExperimentFilter) => "/api/v1/experiments" + queryString({ ...f }),
  experiments: (f: ExperimentFilter, signal?: AbortSignal) =>
    json<{ experiments: Experiment[]; pagination: Pagination }>("GET", api.experimentsPath(f), undefined, signal),
  experiment: (id: number, signal?: AbortSignal) => json<ExperimentDetail>("GET", `/api/v1/experiments/${id}`, undefined, signal),
  experimentAction: (id: number, action: "pause" | "activate" | "cancel" | "kill" | "archive" | "unarchive") =>
    json<unknown>("POST", `/api/v1/experiments/${id}/${action}`, {}),
  trials: (experimentId: number, q: { offset?: number; limit?: number; sortBy?: string; orderBy?: string }, signal?: AbortSignal) =>
    json<{ trials: Trial[]; pagination: Pagination }>("GET", `/api/v1/experiments/${experimentId}/trials` + queryString(q), undefined, signal),
  /** Every trial of an experiment (by id), in pages of the master's maximum, the rest fetched together. */
  allTrials: async (experimentId: number, signal?: AbortSignal): Promise<Trial[]> => {
    const page = 1000;
    const q = (offset: number) => ({ offset, limit: page, sortBy: "SORT_BY_ID", orderBy: "ORDER_BY_ASC" });
    const first = await api.trials(experimentId, q(0), signal);
    const offsets: number[] = [];
    for (let o = first.trials.length; first.trials.length > 0 && o < first.pagination.total; o += page) offsets.push(o);
    const rest = await Promise.all(offsets.map((o) => api.trials(experimentId, q(o), signal)));
    return first.trials.concat(...rest.map((r) => r.trials));
  },
  trial: (id: number, signal?: AbortSignal) => json<{ trial: Trial }>("GET", `/api/v1/trials/${id}`, undefined, signal).then((r) => r.trial),
  /** Learning curves: each trial's series of `metricIds` (`group.name`), downsampled by the master, as columns. */
  seriesColumns: (trialIds: number[], metricIds: string[], maxDatapoints: number, signal?: AbortSignal) =>
    json<{ trials: TrialSeriesColumns[] }>(
      "GET",
      "/api/v1/trials/time-series/columns" + queryString({ trialIds, metricIds, maxDatapoints }),
      undefined,
      signal,
    ).then((r) => r.trials),
  // webhp: the experiment page's tabs.
  hpImportance: (id: number, q: { metricName?: string; metricType?: string }, signal?: AbortSignal) =>
    json<HpImportance>("GET", `/api/v1/experiments/${id}/hyperparameter-importance` + queryString(q), undefined, signal),
  searcherState: (id: number, signal?: AbortSignal) => json<SearcherState>("GET", `/api/v1/experiments/${id}/searcher/state`, undefined, signal),
  experimentCheckpoints: (id: number, q: CheckpointQuery, signal?: AbortSignal) =>
    json<{ checkpoints: Checkpoint[]; pagination: Pagination }>("GET", `/api/v1/experiments/${id}/checkpoints` + queryString(q), undefined, signal),
  trialCheckpoints: (id: number, q: CheckpointQuery, signal?: AbortSignal) =>
    json<{ checkpoints: Checkpoint[]; pagination: Pagination }>("GET", `/api/v1/trials/${id}/checkpoints` + queryString(q), undefined, signal),
  /** The model definition's files as a tree (directories first), without their contents. */
  modelTree: (id: number, signal?: AbortSignal) => json<{ files: FileNode[] }>("GET", `/api/v1/experiments/${id}/file_tree`, undefined, signal).then((r) => r.files ?? []),
  /** One file of the model definition: its bytes (the master sends base64). */
  modelFile: (id: number, path: string, signal?: AbortSignal) =>
    json<{ file: string }>("POST", `/api/v1/experiments/${id}/file`, { experimentId: id, path }, signal).then((r) => Uint8Array.from(atob(r.file ?? ""), (c) => c.charCodeAt(0))),
  workloads: (trialId: number, q: { offset?: number; limit?: number; orderBy?: string }, signal?: AbortSignal) =>
    json<{ workloads: Workload[]; pagination: Pagination }>("GET", `/api/v1/trials/${trialId}/workloads` + queryString(q), undefined, signal),
  /** The master's route that streams a checkpoint's files as a tar (`det checkpoint download`). */
  checkpointDownloadUrl: (uuid: string) => `/checkpoints/${encodeURIComponent(uuid)}`,
  agents: () => json<{ agents: Agent[] }>("GET", "/api/v1/agents").then((r) => r.agents ?? []),
};

/**
 * Streams a trial's logs (newline-delimited JSON, `{"result": {...}}` per line). With `follow`,
 * the master keeps the response open and sends new lines until the trial ends. `onLines` gets
 * each batch as it arrives; the promise settles when the stream ends or `signal` aborts.
 */
export async function streamTrialLogs(
  trialId: number,
  opts: { follow: boolean; levels?: string[]; searchText?: string; limit?: number; orderBy?: string },
  onLines: (lines: LogLine[]) => void,
  signal: AbortSignal,
): Promise<void> {
  const q = queryString({ follow: opts.follow, levels: opts.levels, searchText: opts.searchText, limit: opts.limit, orderBy: opts.orderBy });
  const res = await request("GET", `/api/v1/trials/${trialId}/logs${q}`, undefined, signal);
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    const parts = buffered.split("\n");
    buffered = parts.pop() ?? "";
    const lines: LogLine[] = [];
    for (const part of parts) {
      if (!part.trim()) continue;
      try {
        const parsed = JSON.parse(part);
        if (parsed?.result) lines.push(parsed.result as LogLine);
      } catch {
        /* a partial or foreign line: skip it */
      }
    }
    if (lines.length) onLines(lines);
  }
}

// ---- tasks, cluster, users, bulk actions (the tasks, cluster and admin pages; the experiments
// table's bulk actions) ----------------------------------------------------------------------------

export type TaskState =
  | "STATE_UNSPECIFIED" | "STATE_PULLING" | "STATE_STARTING" | "STATE_RUNNING" | "STATE_TERMINATED"
  | "STATE_TERMINATING" | "STATE_QUEUED" | "STATE_WAITING";

export type TaskKind = "notebook" | "tensorboard" | "shell" | "command";

/** A notebook, TensorBoard, shell or command (upstream's `v1Notebook` … with the fields shown). */
export interface CommandTask {
  id: string; description: string; state: TaskState; startTime: string; username: string;
  displayName?: string; userId?: number; resourcePool?: string; exitStatus?: string; jobId?: string;
  container?: { id: string; state?: string; parent?: string } | null;
  serviceAddress?: string; experimentIds?: number[]; trialIds?: number[];
}

export interface AllocationSummary {
  taskId: string; allocationId: string; name: string; registeredTime: string; resourcePool: string;
  slotsNeeded: number; schedulerType: string;
  resources?: { resourcesId?: string; allocationId?: string; containerId?: string; agentDevices?: Record<string, { devices?: { id?: number }[] }> }[];
}

export interface TaskDetail {
  taskId: string; taskType: string; startTime: string; endTime?: string;
  allocations: { allocationId: string; state: TaskState; isReady?: boolean; slots: number }[];
}

export interface AgentDetail extends Agent {
  registeredTime?: string; addresses?: string[]; version?: string;
  slots?: Record<string, { id?: string; enabled?: boolean; draining?: boolean; container?: { id: string; state?: string } | null; device?: { type?: string; brand?: string } }>;
}

/** `v1ResourcePool`, the fields the cluster page shows (upstream's shape). */
export interface ResourcePool {
  name: string; description?: string; type?: string; numAgents?: number; slotsAvailable?: number; slotsUsed?: number;
  slotType?: string; defaultComputePool?: boolean; defaultAuxPool?: boolean;
  schedulerType?: string; schedulerFittingPolicy?: string;
}

/** `v1RBACJob` / `v1Job`: one entry of the job queue. */
export interface Job {
  summary?: { state?: string; jobsAhead?: number }; type: string; submissionTime?: string; username?: string;
  userId?: number; resourcePool: string; isPreemptible?: boolean; priority?: number; weight?: number;
  entityId: string; jobId: string; requestedSlots?: number; allocatedSlots?: number; name?: string; progress?: number;
  full?: { summary?: { state?: string; jobsAhead?: number }; type: string; resourcePool: string; entityId: string; jobId: string; name?: string; username?: string; requestedSlots?: number; allocatedSlots?: number; priority?: number; submissionTime?: string };
}

/** An endpoint this master may not have yet: `null` on 404 (the page says "not available"). */
async function optional<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ApiError && (e.kind === "not-found" || e.status === 501)) return null;
    throw e;
  }
}

export type BulkAction = "pause" | "activate" | "cancel" | "kill" | "archive" | "unarchive";

/** One experiment's result in a bulk action (`v1ExperimentActionResult`). */
export interface ActionResult { id: number; error: string }

const TASK_PATH: Record<TaskKind, string> = { notebook: "notebooks", tensorboard: "tensorboards", shell: "shells", command: "commands" };

export const clusterApi = {
  tasksOf: (kind: TaskKind, signal?: AbortSignal) =>
    json<Record<string, CommandTask[]>>("GET", `/api/v1/${TASK_PATH[kind]}`, undefined, signal).then((r) => r[TASK_PATH[kind]] ?? []),
  task: (id: string, signal?: AbortSignal) => json<{ task: TaskDetail }>("GET", `/api/v1/tasks/${encodeURIComponent(id)}`, undefined, signal).then((r) => r.task),
  allocations: (signal?: AbortSignal) =>
    json<{ allocationIdToSummary: Record<string, AllocationSummary> }>("GET", "/api/v1/tasks", undefined, signal).then((r) => r.allocationIdToSummary ?? {}),
  launchNotebook: (description?: string) =>
    json<{ notebook: CommandTask }>("POST", "/api/v1/notebooks", { config: description ? { description } : {} }).then((r) => r.notebook),
  launchTensorboard: (experimentIds: number[]) =>
    json<{ tensorboard: CommandTask }>("POST", "/api/v1/tensorboards", { experimentIds }).then((r) => r.tensorboard),
  killTask: (kind: TaskKind, id: string) => json<unknown>("POST", `/api/v1/${TASK_PATH[kind]}/${encodeURIComponent(id)}/kill`, {}),
  agents: (signal?: AbortSignal) => json<{ agents: AgentDetail[] }>("GET", "/api/v1/agents", undefined, signal).then((r) => r.agents ?? []),
  resourcePools: (signal?: AbortSignal) =>
    optional(json<{ resourcePools: ResourcePool[] }>("GET", "/api/v1/resource-pools", undefined, signal).then((r) => r.resourcePools ?? [])),
  jobQueue: (signal?: AbortSignal) =>
    optional(json<{ jobs: Job[] }>("GET", "/api/v1/job-queues" + queryString({ limit: 100 }), undefined, signal).then((r) => r.jobs ?? [])),
  users: (signal?: AbortSignal) =>
    json<{ users: User[] }>("GET", "/api/v1/users" + queryString({ limit: 1000, sortBy: "SORT_BY_USER_NAME" }), undefined, signal).then((r) => r.users ?? []),
  createUser: (username: string, password: string, admin: boolean) =>
    json<{ user: User }>("POST", "/api/v1/users", { user: { username, admin, active: true }, password, isHashed: false }).then((r) => r.user),
  patchUser: (id: number, patch: { active?: boolean; admin?: boolean; displayName?: string }) =>
    json<{ user: User }>("PATCH", `/api/v1/users/${id}`, patch).then((r) => r.user),
  setPassword: (id: number, password: string) => json<unknown>("POST", `/api/v1/users/${id}/password`, password),
  /** A bulk lifecycle action over `ids` of one project (`POST /api/v1/projects/{id}/experiments/{action}`). */
  bulk: (projectId: number, action: BulkAction, ids: number[]) =>
    json<{ results: ActionResult[] }>("POST", `/api/v1/projects/${projectId}/experiments/${action}`, { experimentIds: ids, projectId }).then((r) => r.results ?? []),
  addLabel: (id: number, label: string) => json<unknown>("PUT", `/api/v1/experiments/${id}/labels/${encodeURIComponent(label)}`, {}),
  removeLabel: (id: number, label: string) => json<unknown>("DELETE", `/api/v1/experiments/${id}/labels/${encodeURIComponent(label)}`),
};
