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
        (status = 501, description = "cloud storage or a zip archive", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn download(
    State(state): State<AppState>,
    _caller: Principal,
    Path(uuid): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let format = format(&headers)?;
    let dir = checkpoint_storage::locate_checkpoint(state.store.as_ref(), &uuid).await?;
    let (tx, rx) = mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        if let Err(e) = write_archive(&dir, format, ChannelWriter { tx: tx.clone(), buffer: Vec::with_capacity(CHUNK_BYTES) }) {
            // The status is already sent: end the body with an error so the client sees a broken
            // transfer rather than a short archive.
            tracing::warn!(error = %e, dir = %dir.display(), "checkpoint download failed");
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
        (status = 404, body = ErrorBody), (status = 501, description = "cloud storage", body = ErrorBody)),
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

fn write_archive(dir: &FsPath, format: Format, out: ChannelWriter) -> std::io::Result<()> {
    match format {
        Format::Tar => {
            let mut builder = tar::Builder::new(out);
            append_tree(&mut builder, dir)?;
            builder.into_inner()?.flush()
        }
        Format::TarGz => {
            let mut builder = tar::Builder::new(GzEncoder::new(out, Compression::fast()));
            append_tree(&mut builder, dir)?;
            builder.into_inner()?.finish()?.flush()
        }
    }
}

/// Entries are the checkpoint's files and directories relative to its directory, sorted; links
/// are archived as links, never followed out of the checkpoint.
fn append_tree<W: Write>(builder: &mut tar::Builder<W>, root: &FsPath) -> std::io::Result<()> {
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
