//! Server-streaming responses as grpc-gateway writes them: chunked, one JSON object per line,
//! `{"result": …}` per item and `{"error": …}` if the stream fails midway (the status is already
//! 200 by then).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use resolute_api::logs::{StreamError, StreamLine};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::{ApiError, ApiResult};

/// Streams each batch received as lines of `{"result": to_wire(item)}`; dropping the response
/// (the client went away) drops the receiver, which stops the producer.
pub fn stream<T, W, F>(batches: mpsc::Receiver<ApiResult<Vec<T>>>, to_wire: F) -> Response
where
    T: Send + 'static,
    W: Serialize,
    F: Fn(T) -> W + Send + Unpin + 'static,
{
    let body = Body::from_stream(Lines { batches, to_wire });
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

struct Lines<T, F> {
    batches: mpsc::Receiver<ApiResult<Vec<T>>>,
    to_wire: F,
}

impl<T, W, F> futures_core::Stream for Lines<T, F>
where
    W: Serialize,
    F: Fn(T) -> W + Unpin,
{
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.batches.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Ok(items))) => {
                let mut out = Vec::new();
                for item in items {
                    write_line(&mut out, &StreamLine::Result((this.to_wire)(item)));
                }
                Poll::Ready(Some(Ok(Bytes::from(out))))
            }
            Poll::Ready(Some(Err(e))) => {
                let mut out = Vec::new();
                write_line::<W>(&mut out, &StreamLine::Error(stream_error(&e)));
                Poll::Ready(Some(Ok(Bytes::from(out))))
            }
        }
    }
}

fn write_line<W: Serialize>(out: &mut Vec<u8>, line: &StreamLine<W>) {
    // Serialising our own wire types cannot fail (no non-string map keys, no failing impls).
    if serde_json::to_writer(&mut *out, line).is_ok() {
        out.push(b'\n');
    }
}

fn stream_error(e: &ApiError) -> StreamError {
    StreamError {
        grpc_code: e.code.grpc_code(),
        http_code: i32::from(e.status.as_u16()),
        message: e.message.clone(),
        http_status: e.status.canonical_reason().unwrap_or_default().to_owned(),
        details: Vec::new(),
    }
}
