//! `GET /checkpoints/{uuid}` (outside `/api/v1`, as upstream): a checkpoint's directory as a tar
//! (default) or tar.gz (`Accept: application/gzip`, what the SDK's `Checkpoint.download(mode=MASTER)`
//! sends), streamed while it is written; and `DELETE /api/v1/checkpoints`.

use std::io::Write;
use std::path::{Path as FsPath, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::http::header::{ACCEPT, CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use flate2::Compression;
use flate2::write::GzEncoder;
use resolute_api::checkpoints::{DeleteCheckpointsRequest, DeleteCheckpointsResponse};
use resolute_api::error::ErrorBody;
use resolute_storage::{CheckpointFiles, ObjectFiles};
use tokio::sync::mpsc;

use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::{Principal, checkpoint_gc, checkpoint_storage};
use crate::state::AppState;

/// Bytes per chunk sent to the client.
const CHUNK_BYTES: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Tar,
    TarGz,
}

#[utoipa::path(get, path = "/checkpoints/{checkpointUuid}", tag = "Checkpoints", params(("checkpointUuid" = String, Path)),
    responses((status = 200, description = "application/x-tar, or application/gzip (tar.gz) when accepted", content_type = "application/x-tar"),
        (status = 400, description = "not a completed checkpoint", body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 501, description = "a zip archive", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn download(
    State(state): State<AppState>,
    _caller: Principal,
    Path(uuid): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let format = format(&headers)?;
    let files = checkpoint_storage::locate_checkpoint(state.store.as_ref(), &uuid).await?;
    let (tx, rx) = mpsc::channel(4);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter { tx: tx.clone(), buffer: Vec::with_capacity(CHUNK_BYTES) };
        let written = match &files {
            CheckpointFiles::Directory(dir) => write_archive(format, out, |b| append_tree(b, dir)),
            CheckpointFiles::Objects(objects) => write_archive(format, out, |b| append_objects(b, objects, &runtime)),
        };
        if let Err(e) = written {
            // The status is already sent: end the body with an error so the client sees a broken
            // transfer rather than a short archive.
            tracing::warn!(error = %e, files = ?files, "checkpoint download failed");
            let _ = tx.blocking_send(Err(e));
        }
    });
    let (content_type, extension) = match format {
        Format::Tar => ("application/x-tar", "tar"),
        Format::TarGz => ("application/gzip", "tar.gz"),
    };
    let disposition = format!("attachment; filename=\"{uuid}.{extension}\"");
    Ok(([(CONTENT_TYPE, content_type.to_owned()), (CONTENT_DISPOSITION, disposition)], Body::from_stream(Chunks { rx })).into_response())
}

#[utoipa::path(delete, path = "/api/v1/checkpoints", tag = "Checkpoints", request_body = DeleteCheckpointsRequest,
    responses((status = 200, body = DeleteCheckpointsResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 501, description = "an unknown storage type", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(body): JsonBody<DeleteCheckpointsRequest>,
) -> ApiResult<Json<DeleteCheckpointsResponse>> {
    checkpoint_gc::delete_checkpoints(state.store.as_ref(), &caller, &body.checkpoint_uuids).await?;
    Ok(Json(DeleteCheckpointsResponse {}))
}

fn format(headers: &HeaderMap) -> ApiResult<Format> {
    let accept = headers.get_all(ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    let types: Vec<&str> = accept.split(',').map(|t| t.split(';').next().unwrap_or_default().trim()).collect();
    if types.iter().any(|t| matches!(*t, "application/gzip" | "application/x-gzip" | "application/x-gtar")) {
        Ok(Format::TarGz)
    } else if types.iter().any(|t| matches!(*t, "application/x-tar" | "*/*" | "application/*" | "")) {
        Ok(Format::Tar)
    } else if types.contains(&"application/zip") {
        Err(ApiError::unimplemented("zip checkpoint downloads are not supported yet; accept application/gzip or application/x-tar"))
    } else {
        Err(ApiError::invalid(format!("cannot send a checkpoint as {accept:?}; accept application/x-tar or application/gzip"))
            .with_status(axum::http::StatusCode::NOT_ACCEPTABLE))
    }
}

fn write_archive(
    format: Format,
    out: ChannelWriter,
    fill: impl FnOnce(&mut tar::Builder<&mut dyn Write>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match format {
        Format::Tar => {
            let mut out = out;
            let mut builder = tar::Builder::new(&mut out as &mut dyn Write);
            fill(&mut builder)?;
            builder.finish()?;
            drop(builder);
            out.flush()
        }
        Format::TarGz => {
            let mut gz = GzEncoder::new(out, Compression::fast());
            let mut builder = tar::Builder::new(&mut gz as &mut dyn Write);
            fill(&mut builder)?;
            builder.finish()?;
            drop(builder);
            gz.finish()?.flush()
        }
    }
}

/// A bucket's objects as regular files (mode 0644), read as they arrive; runs on a blocking
/// thread, waiting on the runtime for each piece.
fn append_objects(
    builder: &mut tar::Builder<&mut dyn Write>,
    objects: &ObjectFiles,
    runtime: &tokio::runtime::Handle,
) -> std::io::Result<()> {
    use futures_util::StreamExt;
    for file in &objects.files {
        let mut stream = runtime.block_on(objects.read(file)).map_err(std::io::Error::other)?;
        let mut header = tar::Header::new_gnu();
        header.set_size(file.size);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        let reader = StreamReader { next: move || runtime.block_on(stream.next()), pending: Vec::new(), at: 0 };
        builder.append_data(&mut header, &file.relative, reader)?;
    }
    Ok(())
}

/// `Read` over a stream of byte chunks.
struct StreamReader<F> {
    next: F,
    pending: Vec<u8>,
    at: usize,
}

impl<F: FnMut() -> Option<std::io::Result<Vec<u8>>>> std::io::Read for StreamReader<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.pending.len() {
            match (self.next)() {
                Some(chunk) => {
                    self.pending = chunk?;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Entries are the checkpoint's files and directories relative to its directory, sorted; links
/// are archived as links, never followed out of the checkpoint.
fn append_tree(builder: &mut tar::Builder<&mut dyn Write>, root: &FsPath) -> std::io::Result<()> {
    builder.follow_symlinks(false);
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let mut children: Vec<_> = std::fs::read_dir(root.join(&relative))?.collect::<Result<_, _>>()?;
        children.sort_by_key(|e| e.file_name());
        // Reversed so that popping visits subdirectories in name order.
        for entry in children.iter().rev() {
            let name = relative.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                pending.push(name);
            }
        }
        for entry in children {
            let name = relative.join(entry.file_name());
            builder.append_path_with_name(entry.path(), &name)?;
        }
    }
    Ok(())
}

/// A blocking writer that hands full chunks to the response body; fails once the client is gone,
/// which stops the archive.
struct ChannelWriter {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    buffer: Vec<u8>,
}

impl ChannelWriter {
    fn send_buffer(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES)));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK_BYTES {
            self.send_buffer()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send_buffer()
    }
}

struct Chunks {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
}

impl futures_core::Stream for Chunks {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, value.parse().unwrap());
        h
    }

    #[test]
    fn accept_header_picks_the_format() {
        assert_eq!(format(&HeaderMap::new()).unwrap(), Format::Tar);
        assert_eq!(format(&accept("application/gzip")).unwrap(), Format::TarGz);
        assert_eq!(format(&accept("application/x-tar")).unwrap(), Format::Tar);
        assert_eq!(format(&accept("*/*")).unwrap(), Format::Tar);
        assert_eq!(format(&accept("application/zip")).unwrap_err().status, 501);
        assert_eq!(format(&accept("text/html")).unwrap_err().status, 406);
    }
}
