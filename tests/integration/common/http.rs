//! A loopback HTTP/1.1 server for download tests: one request per connection, answered by a
//! handler; each request is logged as "<path> <range>".

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// What the handler sees of a request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request target (`/org/repo/...`).
    pub path: String,
    /// A `Range: bytes=a-[b]` header.
    pub range: Option<(u64, Option<u64>)>,
}

/// The handler's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status line after `HTTP/1.1 ` (`200 OK`).
    pub status: String,
    /// Extra header lines, without CRLF.
    pub headers: Vec<String>,
    /// The body; Content-Length is always its full length.
    pub body: Vec<u8>,
    /// Send only this many body bytes, then close: a transfer cut off mid-body.
    pub cut: Option<usize>,
}

impl Reply {
    /// 200 with a body.
    pub fn ok(body: Vec<u8>) -> Self {
        Reply {
            status: "200 OK".into(),
            headers: Vec::new(),
            body,
            cut: None,
        }
    }

    /// 404 with no body.
    pub fn not_found() -> Self {
        Reply {
            status: "404 Not Found".into(),
            headers: Vec::new(),
            body: Vec::new(),
            cut: None,
        }
    }
}

/// A running server.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Every request, in order.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Serve on a free loopback port until the test process ends.
pub fn serve(mut handler: impl FnMut(&Request, u16) -> Reply + Send + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut first = String::new();
            if r.read_line(&mut first).is_err() {
                continue;
            }
            let mut range: Option<(u64, Option<u64>)> = None;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("range") {
                        let v = v.trim().trim_start_matches("bytes=");
                        let (a, b) = v.split_once('-').unwrap();
                        range = Some((a.parse().unwrap(), b.parse().ok()));
                    }
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
            log2.lock().unwrap().push(format!("{path} {range:?}"));
            let reply = handler(&Request { path, range }, port);
            let mut head = format!("HTTP/1.1 {}\r\n", reply.status);
            for h in &reply.headers {
                head.push_str(h);
                head.push_str("\r\n");
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                reply.body.len()
            ));
            let _ = s.write_all(head.as_bytes());
            let n = reply.cut.unwrap_or(reply.body.len()).min(reply.body.len());
            let _ = s.write_all(&reply.body[..n]);
            let _ = s.flush();
            let _ = s.shutdown(std::net::Shutdown::Both);
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink);
        }
    });
    Server { port, log }
}
