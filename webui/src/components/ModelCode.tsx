// The experiment's model definition (the context directory the CLI uploaded), as upstream's
// WebUI shows it: the tree from `GET /api/v1/experiments/{id}/file_tree` (names, sizes, types;
// no contents), and the chosen file's bytes from `POST /api/v1/experiments/{id}/file` — one file
// at a time, so a large context is never downloaded whole. Binary files are named, not shown.

import { Fragment } from "preact";
import { useMemo, useState } from "preact/hooks";
import { api, type FileNode } from "../api";
import { useResource } from "./data";
import { fmtBytes } from "./Checkpoints";
import { ErrorBanner, Spinner } from "./ui";

/** Every file (not directory) of the tree, depth first, in the tree's order. */
export function flattenFiles(nodes: FileNode[]): FileNode[] {
  return nodes.flatMap((n) => (n.isDir ? flattenFiles(n.files ?? []) : [n]));
}

/** Text when the type says so or the bytes hold no NUL. */
function isText(node: FileNode, data: Uint8Array): boolean {
  if (/^(text\/|application\/(json|yaml|x-sh))/.test(node.contentType)) return true;
  if (node.contentType && node.contentType !== "application/octet-stream") return false;
  return !data.subarray(0, 4096).includes(0);
}

export function ModelCode({ experimentId }: { experimentId: number }) {
  const tree = useResource((signal) => api.modelTree(experimentId, signal), [experimentId]);
  const [open, setOpen] = useState<string | null>(null);
  const files = useMemo(() => flattenFiles(tree.data ?? []), [tree.data]);
  const shown = files.find((f) => f.path === open) ?? files.find((f) => /\.ya?ml$|\.py$/.test(f.path)) ?? files[0];
  const content = useResource(
    (signal) => (shown ? api.modelFile(experimentId, shown.path, signal) : Promise.resolve(new Uint8Array())),
    [experimentId, shown?.path],
  );
  if (tree.error) return <ErrorBanner error={tree.error} retry={tree.reload} />;
  if (!tree.data) return <Spinner />;
  if (!shown) return <p class="muted" data-testid="model-files-empty">This experiment was created without a model definition.</p>;
  return (
    <div class="model-code">
      <ul class="file-list" data-testid="model-files">
        <TreeItems nodes={tree.data} depth={0} selected={shown.path} onOpen={setOpen} />
      </ul>
      <div class="file-view">
        <div class="file-name mono">{shown.path} <span class="muted small">{fmtBytes(shown.contentLength)}</span></div>
        {content.error && <ErrorBanner error={content.error} retry={content.reload} />}
        {content.data ? (
          isText(shown, content.data)
            ? <pre class="code" data-testid="model-file-text">{new TextDecoder().decode(content.data)}</pre>
            : <p class="muted" data-testid="model-file-binary">A binary file ({shown.contentType || "unknown type"}, {fmtBytes(shown.contentLength)}).</p>
        ) : !content.error && <Spinner />}
      </div>
    </div>
  );
}

function TreeItems({ nodes, depth, selected, onOpen }: { nodes: FileNode[]; depth: number; selected: string; onOpen: (path: string) => void }) {
  return (
    <>
      {nodes.map((n) => n.isDir ? (
        <Fragment key={n.path}>
          <li class="dir" style={{ paddingLeft: `${6 + depth * 14}px` }} data-dir={n.path}>{n.name}/</li>
          <TreeItems nodes={n.files ?? []} depth={depth + 1} selected={selected} onOpen={onOpen} />
        </Fragment>
      ) : (
        <li key={n.path} class={n.path === selected ? "selected" : ""} style={{ paddingLeft: `${6 + depth * 14}px` }}>
          <a href="#" onClick={(e) => { e.preventDefault(); onOpen(n.path); }} data-path={n.path}>{n.name}</a>
          <span class="muted small"> {fmtBytes(n.contentLength)}</span>
        </li>
      ))}
    </>
  );
}
