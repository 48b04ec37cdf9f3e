//! `det tunnel MASTER SERVICE_ID`: pipes stdin/stdout through a websocket to the master's
//! `/proxy/<service>/` as binary frames (upstream's `determined.cli.tunnel`), so ssh can reach a
//! shell's sshd with `ProxyCommand="det tunnel <master> %h"`.

use std::io::{Read, Write};

use clap::Args;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::auth_store::TokenStore;
use crate::error::CliError;
use crate::master_tls::MasterCert;
use crate::session;
use crate::url::canonicalize_master_url;

#[derive(Debug, Args)]
pub struct TunnelArgs {
    /// the master's address
    pub master_url: String,
    /// the service (task) ID to connect to
    pub service_uuid: String,
    /// log in (possibly prompting) instead of using a cached token only
    #[arg(long)]
    pub auth: bool,
    /// PEM file of the master's certificate to trust, or `noverify` (instead of DET_MASTER_CERT_FILE)
    #[arg(long)]
    pub cert_file: Option<String>,
    /// the name the master's certificate carries, when not its host name (instead of DET_MASTER_CERT_NAME)
    #[arg(long)]
    pub cert_name: Option<String>,
}

/// Connects, then copies until the master closes the websocket; end of stdin closes it from our
/// side. Only stdout carries tunnel bytes, so everything else goes to stderr.
pub fn run(args: &TunnelArgs, user: Option<&str>) -> Result<(), CliError> {
    let tls_error = |e: resolute_tls::TlsError| CliError::Client(e.into());
    let master = canonicalize_master_url(&args.master_url)?;
    let token = token(&master, user, args.auth)?;
    let url = format!("ws{}/proxy/{}/", master.trim_start_matches("http"), args.service_uuid);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::msg(format!("cannot start the tunnel: {e}")))?;
    let tls = if args.cert_file.is_some() || args.cert_name.is_some() {
        MasterCert::explicit(args.cert_file.as_deref(), args.cert_name.as_deref()).and_then(|c| c.client_config()).map_err(tls_error)?
    } else {
        crate::master_tls::config_for(&master).map_err(tls_error)?
    };
    runtime.block_on(pipe(&url, token.as_deref(), tls))
}

/// The session token for the proxy: a cached or task-provided one; a login only with `--auth`,
/// since ssh owns our stdin and there is no one to answer a password prompt.
fn token(master: &str, user: Option<&str>, auth: bool) -> Result<Option<String>, CliError> {
    if auth {
        return Ok(Some(session::login_with_cache(master, user)?.client.token().unwrap_or_default().to_owned()));
    }
    if let Ok(token) = std::env::var("DET_USER_TOKEN") {
        return Ok(Some(token));
    }
    let Ok(store) = TokenStore::open(master) else { return Ok(None) };
    let user =
        user.map(str::to_owned).or_else(|| store.active_user().map(str::to_owned)).unwrap_or_else(|| session::DEFAULT_USER.to_owned());
    Ok(store.token(&user).map(str::to_owned))
}

async fn pipe(url: &str, token: Option<&str>, tls: std::sync::Arc<rustls::ClientConfig>) -> Result<(), CliError> {
    let failed = |e: &dyn std::fmt::Display| CliError::msg(format!("Connection to {url} failed: {e}"));
    let mut request = url.into_client_request().map_err(|e| failed(&e))?;
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| failed(&e))?;
        request.headers_mut().insert("Authorization", value);
    }
    let connector = tokio_tungstenite::Connector::Rustls(tls);
    let (ws, _) = tokio_tungstenite::connect_async_tls_with_config(request, None, true, Some(connector)).await.map_err(|e| failed(&e))?;
    let (mut sink, mut stream) = ws.split();

    // stdin is read on its own thread: a blocking read must not stall frames coming back.
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(16);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });

    let mut stdout = std::io::stdout().lock();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            chunk = rx.recv(), if stdin_open => match chunk {
                Some(bytes) => sink.send(Message::binary(bytes)).await.map_err(|e| failed(&e))?,
                None => {
                    stdin_open = false;
                    let _ = sink.send(Message::Close(None)).await;
                }
            },
            frame = stream.next() => match frame {
                Some(Ok(Message::Binary(bytes))) => {
                    stdout.write_all(&bytes).and_then(|()| stdout.flush()).map_err(|e| failed(&e))?;
                }
                Some(Ok(Message::Text(text))) => {
                    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(|e| failed(&e))?;
                }
                Some(Ok(Message::Close(_))) | None => return Ok(()),
                Some(Ok(_)) => {}
                // The peer dropping the connection after our close is the normal end.
                Some(Err(_)) if !stdin_open => return Ok(()),
                Some(Err(e)) => return Err(failed(&e)),
            },
        }
    }
}
