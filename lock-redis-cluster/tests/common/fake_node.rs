//! A scripted stand-in for cluster nodes: answers `CLUSTER SLOTS` with a
//! map the test sets, `EVALSHA` with replies the test scripts, everything
//! else with `+OK`; records every command it gets. A scripted [`HANG_UP`]
//! reply closes the connection instead of answering (the command was
//! received and logged: a connection that broke after the send).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// A scripted `EVALSHA` reply that closes the connection without answering.
pub(crate) const HANG_UP: &str = "<hang up>";

/// Decides the reply (raw RESP) to one `EVALSHA` from the node's log so far.
pub(crate) type Script = Box<dyn FnMut(&[Vec<String>]) -> String + Send>;

pub(crate) struct FakeNode {
    pub(crate) port: u16,
    state: Arc<Mutex<State>>,
}

struct State {
    log: Vec<Vec<String>>,
    evalsha: Script,
    slots: String,
    /// Replies for the next `EVALSHA`s, before `evalsha` is asked.
    queued: VecDeque<String>,
    /// The SHA1 `SCRIPT LOAD` answers.
    script_sha: String,
}

impl FakeNode {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            log: Vec::new(),
            evalsha: Box::new(|_| ":0\r\n".to_owned()),
            slots: "*0\r\n".to_owned(),
            queued: VecDeque::new(),
            script_sha: String::new(),
        }));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Self { port, state }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `CLUSTER SLOTS` answers: every range served by the given ports.
    pub(crate) fn set_slots(&self, ranges: &[(u16, u16, u16)]) {
        let mut reply = format!("*{}\r\n", ranges.len());
        for (start, end, port) in ranges {
            reply += &format!(
                "*3\r\n:{start}\r\n:{end}\r\n*3\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$2\r\nid\r\n"
            );
        }
        self.state.lock().unwrap().slots = reply;
    }

    pub(crate) fn on_evalsha(&self, script: impl FnMut(&[Vec<String>]) -> String + Send + 'static) {
        self.state.lock().unwrap().evalsha = Box::new(script);
    }

    /// What `SCRIPT LOAD` answers (redis-rs checks it is the script's
    /// SHA1).
    pub(crate) fn set_script_sha(&self, sha: &str) {
        self.state.lock().unwrap().script_sha = sha.to_owned();
    }

    pub(crate) fn queue(&self, replies: &[&str]) {
        let mut state = self.state.lock().unwrap();
        state.queued.extend(replies.iter().map(|r| (*r).to_owned()));
    }

    /// The commands received, upper-cased names, handshake commands left
    /// out.
    pub(crate) fn log(&self) -> Vec<Vec<String>> {
        self.state
            .lock()
            .unwrap()
            .log
            .iter()
            .filter(|c| !matches!(c[0].as_str(), "CLIENT" | "HELLO"))
            .cloned()
            .collect()
    }

    pub(crate) fn count(&self, name: &str) -> usize {
        self.log().iter().filter(|c| c[0] == name).count()
    }
}

async fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    while let Some(cmd) = read_command(&mut reader).await {
        let reply = {
            let mut state = state.lock().unwrap();
            state.log.push(cmd.clone());
            match cmd[0].as_str() {
                "CLUSTER" => state.slots.clone(),
                "EVALSHA" => match state.queued.pop_front() {
                    Some(reply) => reply,
                    None => {
                        let log = state.log.clone();
                        (state.evalsha)(&log)
                    }
                },
                "PING" => "+PONG\r\n".to_owned(),
                "SCRIPT" => format!("${}\r\n{}\r\n", state.script_sha.len(), state.script_sha),
                _ => "+OK\r\n".to_owned(),
            }
        };
        if reply == HANG_UP {
            return;
        }
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_command(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<Vec<String>> {
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let n: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for i in 0..n {
        line.clear();
        reader.read_line(&mut line).await.ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut data = vec![0; len + 2];
        reader.read_exact(&mut data).await.ok()?;
        data.truncate(len);
        let arg = String::from_utf8_lossy(&data).into_owned();
        args.push(if i == 0 { arg.to_uppercase() } else { arg });
    }
    Some(args)
}
