// The experiment's model definition (the context directory the CLI uploaded): the master's
// `GET /api/v1/experiments/{id}/model_def` sends it as a base64 tar.gz; the browser unzips it
// (DecompressionStream) and reads the tar here, so the files list and their text need no other
// endpoint. Binary files are named, not shown.

import { useState } from "preact/hooks";
import { api } from "../api";
import { useResource } from "./data";
import { fmtBytes } from "./Checkpoints";
import { ErrorBanner, Spinner } from "./ui";

export interface TarEntry { path: string; size: number; dir: boolean; data: Uint8Array }

function field(block: Uint8Array, start: number, len: number): string {
  const bytes = block.subarray(start, start + len);
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/** The entries of a (ustar / GNU / pax) tar archive. */
export function readTar(buf: Uint8Array): TarEntry[] {
  const out: TarEntry[] = [];
  let off = 0;
  let longName: string | null = null;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = parseInt(field(h, 124, 12).trim() || "0", 8) || 0;
    const type = String.fromCharCode(h[156] ?? 48);
    const prefix = field(h, 345, 155);
    let name = longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    longName = null;
    const data = buf.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = new TextDecoder().decode(data).replace(/\0+$/, "");
      continue;
    }
    if (type === "x") {
      const m = /\d+ path=([^\n]*)\n/.exec(new TextDecoder().decode(data));
      if (m) longName = m[1]!;
      continue;
    }
    if (type === "g") continue;
    name = name.replace(/^\.\//, "");
    if (!name || name === ".") continue;
    out.push({ path: name.replace(/\/$/, ""), size, dir: type === "5", data });
  }
  return out;
}

async function gunzip(b64: string): Promise<Uint8Array> {
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function isText(data: Uint8Array): boolean {
  const sample = data.subarray(0, 4096);
  return !sample.includes(0);
}

export function ModelCode({ experimentId }: { experimentId: number }) {
  const res = useResource(async (signal) => {
    const b64 = await api.modelDef(experimentId, signal);
    return b64 ? readTar(await gunzip(b64)) : [];
  }, [experimentId]);
  const [open, setOpen] = useState<string | null>(null);
  if (res.error) return <ErrorBanner error={res.error} retry={res.reload} />;
  if (!res.data) return <Spinner />;
  const files = res.data.filter((f) => !f.dir).sort((a, b) => a.path.localeCompare(b.path));
  if (!files.length) return <p class="muted" data-testid="model-files-empty">This experiment was created without a model definition.</p>;
  const shown = files.find((f) => f.path === open) ?? files.find((f) => /\.ya?ml$|\.py$/.test(f.path) && isText(f.data)) ?? files[0]!;
  return (
    <div class="model-code">
      <ul class="file-list" data-testid="model-files">
        {files.map((f) => (
          <li key={f.path} class={f === shown ? "selected" : ""}>
            <a href="#" onClick={(e) => { e.preventDefault(); setOpen(f.path); }} data-path={f.path}>{f.path}</a>
            <span class="muted small"> {fmtBytes(f.size)}</span>
          </li>
        ))}
      </ul>
      <div class="file-view">
        <div class="file-name mono">{shown.path}</div>
        {isText(shown.data) ? <pre class="code" data-testid="model-file-text">{new TextDecoder().decode(shown.data)}</pre> : <p class="muted">A binary file ({fmtBytes(shown.size)}).</p>}
      </div>
    </div>
  );
}
