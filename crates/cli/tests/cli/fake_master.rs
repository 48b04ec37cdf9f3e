//! A canned-response HTTP server standing in for master endpoints our real master does not have
//! yet (logs, tasks, agents, checkpoint download). Answers by exact method + path; records every
//! request so tests can check what the CLI sent.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// Path with query string.
    pub target: String,
    pub body: String,
}

/// Per route, the answers still to give: each request takes the first, and the last one stays.
type Routes = HashMap<(String, String), VecDeque<(u16, Vec<u8>)>>;

pub struct FakeMaster {
    pub url: String,
    routes: Arc<Mutex<Routes>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeMaster {
    pub fn start() -> FakeMaster {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let (r, q) = (routes.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, q) = (r.clone(), q.clone());
                std::thread::spawn(move || serve(stream, &r, &q));
            }
        });
        FakeMaster { url, routes, requests }
    }

    /// Answers `method path` (no query) with `status` and `body`.
    pub fn route(&self, method: &str, path: &str, status: u16, body: impl Into<Vec<u8>>) {
        self.routes.lock().unwrap().insert((method.to_owned(), path.to_owned()), VecDeque::from([(status, body.into())]));
    }

    /// Answers `method path` with each JSON body in turn, repeating the last one.
    pub fn json_sequence(&self, method: &str, path: &str, bodies: &[serde_json::Value]) {
        let answers = bodies.iter().map(|b| (200, b.to_string().into_bytes())).collect();
        self.routes.lock().unwrap().insert((method.to_owned(), path.to_owned()), answers);
    }

    pub fn json(&self, method: &str, path: &str, body: &serde_json::Value) {
        self.route(method, path, 200, body.to_string());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Query strings the CLI sent to `path`.
    pub fn queries(&self, path: &str) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter_map(|r| r.target.strip_prefix(path).map(|rest| rest.trim_start_matches('?').to_owned()))
            .collect()
    }
}

fn serve(stream: TcpStream, routes: &Mutex<Routes>, requests: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    requests.lock().unwrap().push(Recorded {
        method: method.clone(),
        target: target.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let path = target.split('?').next().unwrap_or("").to_owned();
    let next = routes
        .lock()
        .unwrap()
        .get_mut(&(method, path))
        .and_then(|answers| if answers.len() > 1 { answers.pop_front() } else { answers.front().cloned() });
    let (status, payload) = next.unwrap_or_else(|| (404, br#"{"error":{"code":5,"reason":"NotFound","error":"not found"}}"#.to_vec()));
    let mut out = stream;
    let head =
        format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", payload.len());
    let _ = out.write_all(head.as_bytes()).and_then(|()| out.write_all(&payload));
}
