//! The ranks of a job find each other: a small TCP rendezvous of our own, with a deadline.
//! Rank 0 listens where the scheduler says ([`super::world::World::rendezvous`]); every other
//! rank connects and says hello; once all have, rank 0 sends each the start (NCCL's unique id),
//! and after each step every rank reports to rank 0 over the same connection. A later step that
//! needs rank 0's word first (the pairs' unique ids) gets it as another start.
//!
//! Whatever connects is another user's input: a frame is a 4-byte big-endian length and at most
//! [`MOST_BYTES`] of JSON; every read and write has a time limit; a hello of another job, of
//! another size, of a rank out of range or already taken is turned away and does not count; so
//! is one without the job's token, where rank 0 has one ([`super::TOKEN_VAR`]).

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The largest frame either side reads or writes.
pub const MOST_BYTES: usize = 4 << 20;
/// How long one connection may take to say hello before it is dropped.
const HELLO_WITHIN: Duration = Duration::from_secs(5);
/// Between tries to reach rank 0, and between looks for a connection to accept.
const PAUSE: Duration = Duration::from_millis(50);
/// How long a rank waits for rank 0's start beyond its own deadline: rank 0 may have started
/// later, and gives up at its own.
pub const START_GRACE: Duration = Duration::from_secs(30);

/// What a rank says when it connects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub job: String,
    pub rank: u32,
    pub size: u32,
    pub host: String,
    /// The NCCL it runs (`2.28.9+cuda13.0`): one job needs one NCCL.
    pub nccl: String,
    /// The job's token ([`super::TOKEN_VAR`]), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<super::Token>,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Frame {
    Hello(Hello),
    Start {
        body: serde_json::Value,
    },
    Abort {
        reason: String,
    },
    Report {
        step: String,
        body: serde_json::Value,
    },
}

/// Writes one frame within `within`.
fn send(stream: &mut TcpStream, frame: &Frame, within: Duration) -> Result<(), String> {
    let body = serde_json::to_vec(frame).map_err(|e| e.to_string())?;
    if body.len() > MOST_BYTES {
        return Err(format!(
            "a {} B message is over the {MOST_BYTES} B limit",
            body.len()
        ));
    }
    stream
        .set_write_timeout(Some(within.max(Duration::from_millis(1))))
        .map_err(|e| e.to_string())?;
    let length = u32::try_from(body.len()).map_err(|e| e.to_string())?;
    stream
        .write_all(&length.to_be_bytes())
        .and_then(|()| stream.write_all(&body))
        .and_then(|()| stream.flush())
        .map_err(|e| format!("sending: {e}"))
}

/// Reads one frame, waiting until `deadline` at most.
fn receive(stream: &mut TcpStream, deadline: Instant) -> Result<Frame, String> {
    let mut read = |buffer: &mut [u8]| {
        let mut filled = 0;
        while filled < buffer.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("no answer in time".to_owned());
            }
            stream
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            match stream.read(&mut buffer[filled..]) {
                Ok(0) => return Err("the connection was closed".to_owned()),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err("no answer in time".to_owned())
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    };
    let mut length = [0u8; 4];
    read(&mut length)?;
    let length = u32::from_be_bytes(length) as usize;
    if length > MOST_BYTES {
        return Err(format!(
            "a {length} B message is over the {MOST_BYTES} B limit"
        ));
    }
    let mut body = vec![0u8; length];
    read(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| format!("not a rendezvous message: {e}"))
}

/// The addresses `host:port` names.
fn addresses(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}:{port} does not resolve: {e}"))?
        .collect();
    if found.is_empty() {
        return Err(format!("{host}:{port} resolves to no address"));
    }
    Ok(found)
}

/// Rank 0's side: a connection to every other rank, by rank.
pub struct Root {
    peers: Vec<(Hello, TcpStream)>,
}

/// Why rank 0 started no job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotGathered {
    /// It could not listen where the ranks look for it.
    Listen(String),
    /// These ranks never said hello before the deadline; the others did.
    Missing {
        ranks: Vec<u32>,
        /// Connections turned away, and why.
        turned_away: Vec<String>,
    },
}

impl Root {
    /// Listens at `host:port` and waits until every rank of `me.size` has said hello, or
    /// `deadline`; a rank that never does is named in [`NotGathered::Missing`], and the ranks
    /// that did are told to stop.
    pub fn gather(
        host: &str,
        port: u16,
        me: &Hello,
        deadline: Instant,
    ) -> Result<Root, NotGathered> {
        let listen = |e: String| {
            NotGathered::Listen(format!(
                "rank 0 cannot listen on {host}:{port} for the other ranks: {e}; the rendezvous address (MASTER_ADDR, MASTER_PORT or --rendezvous) must be this node's, and the port free"
            ))
        };
        let at = addresses(host, port).map_err(listen)?;
        let listener = TcpListener::bind(&at[..]).map_err(|e| listen(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| listen(e.to_string()))?;
        let others = me.size.saturating_sub(1) as usize;
        let mut peers: Vec<(Hello, TcpStream)> = Vec::with_capacity(others);
        let mut turned_away = Vec::new();
        while peers.len() < others && Instant::now() < deadline {
            let mut stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(PAUSE);
                    continue;
                }
                Err(_) => {
                    std::thread::sleep(PAUSE);
                    continue;
                }
            };
            let from = stream
                .peer_addr()
                .map_or_else(|_| "?".into(), |a| a.to_string());
            let said = stream
                .set_nonblocking(false)
                .map_err(|e| e.to_string())
                .and_then(|()| receive(&mut stream, (Instant::now() + HELLO_WITHIN).min(deadline)));
            let refusal = match said {
                Ok(Frame::Hello(hello)) => match welcome(me, &hello, &peers) {
                    None => {
                        peers.push((hello, stream));
                        continue;
                    }
                    Some(why) => why,
                },
                Ok(_) => "it sent something other than a hello".to_owned(),
                Err(e) => e,
            };
            let _ = send(
                &mut stream,
                &Frame::Abort {
                    reason: refusal.clone(),
                },
                HELLO_WITHIN,
            );
            if turned_away.len() < 16 {
                turned_away.push(format!("{from}: {refusal}"));
            }
        }
        let mut root = Root { peers };
        if root.peers.len() < others {
            let joined: Vec<u32> = root.peers.iter().map(|(h, _)| h.rank).collect();
            let ranks: Vec<u32> = (1..me.size).filter(|r| !joined.contains(r)).collect();
            root.abort(&format!(
                "rank(s) {} never joined; rank 0 stopped the job",
                super::ranges(&ranks)
            ));
            return Err(NotGathered::Missing { ranks, turned_away });
        }
        root.peers.sort_by_key(|(hello, _)| hello.rank);
        Ok(root)
    }

    /// Every other rank's hello, by rank.
    pub fn hellos(&self) -> impl Iterator<Item = &Hello> {
        self.peers.iter().map(|(hello, _)| hello)
    }

    /// Sends `body` to every rank as the start (of the job, or of a step that needs rank 0's
    /// word); the ranks it cannot reach, with why.
    pub fn start(&mut self, body: &serde_json::Value) -> Vec<(u32, String)> {
        let frame = Frame::Start { body: body.clone() };
        self.each(&frame)
    }

    /// Tells every rank to stop, with `reason`.
    pub fn abort(&mut self, reason: &str) {
        let frame = Frame::Abort {
            reason: reason.to_owned(),
        };
        let _ = self.each(&frame);
    }

    fn each(&mut self, frame: &Frame) -> Vec<(u32, String)> {
        let mut failed = Vec::new();
        for (hello, stream) in &mut self.peers {
            if let Err(e) = send(stream, frame, HELLO_WITHIN) {
                failed.push((hello.rank, e));
            }
        }
        failed
    }

    /// Every other rank's report of `step`, by rank, each waited for until `deadline`.
    pub fn collect(
        &mut self,
        step: &str,
        deadline: Instant,
    ) -> Vec<(u32, Result<serde_json::Value, String>)> {
        self.peers
            .iter_mut()
            .map(|(hello, stream)| {
                let report = match receive(stream, deadline) {
                    Ok(Frame::Report { step: s, body }) if s == step => Ok(body),
                    Ok(Frame::Report { step: s, .. }) => {
                        Err(format!("it reported {s} where {step} was due"))
                    }
                    Ok(Frame::Abort { reason }) => Err(reason),
                    Ok(_) => Err("it sent something other than a report".to_owned()),
                    Err(e) => Err(e),
                };
                (hello.rank, report)
            })
            .collect()
    }
}

/// Why rank 0 turns `hello` away, if it does.
fn welcome(me: &Hello, hello: &Hello, peers: &[(Hello, TcpStream)]) -> Option<String> {
    if me
        .token
        .as_ref()
        .is_some_and(|t| !t.matches(hello.token.as_ref()))
    {
        Some(format!(
            "it does not hold the job's rendezvous token ({})",
            super::TOKEN_VAR
        ))
    } else if hello.job != me.job {
        Some(format!("it is of job {}, not {}", hello.job, me.job))
    } else if hello.size != me.size {
        Some(format!(
            "it counts {} rank(s), rank 0 counts {}",
            hello.size, me.size
        ))
    } else if hello.rank == 0 || hello.rank >= me.size {
        Some(format!("rank {} is not one of 1..{}", hello.rank, me.size))
    } else if peers.iter().any(|(p, _)| p.rank == hello.rank) {
        Some(format!("rank {} has already joined", hello.rank))
    } else if hello.nccl != me.nccl {
        Some(format!(
            "rank {} on {} runs NCCL {}, rank 0 on {} runs {}: one job needs one NCCL",
            hello.rank, hello.host, hello.nccl, me.host, me.nccl
        ))
    } else {
        None
    }
}

/// Another rank's side: its connection to rank 0.
pub struct Member {
    stream: TcpStream,
}

impl Member {
    /// Reaches rank 0 at `host:port` (trying again until `deadline`) and says hello.
    pub fn join(host: &str, port: u16, hello: &Hello, deadline: Instant) -> Result<Member, String> {
        let at = addresses(host, port)?;
        let mut last = String::new();
        while Instant::now() < deadline {
            for address in &at {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match TcpStream::connect_timeout(address, left.min(HELLO_WITHIN)) {
                    Ok(mut stream) => {
                        send(&mut stream, &Frame::Hello(hello.clone()), HELLO_WITHIN)?;
                        return Ok(Member { stream });
                    }
                    Err(e) => last = e.to_string(),
                }
            }
            std::thread::sleep(PAUSE);
        }
        Err(format!(
            "rank 0 never answered at {host}:{port} before the deadline ({last}); is rank 0 running, and is that its address?"
        ))
    }

    /// Waits until `deadline` for rank 0's next start.
    pub fn started(&mut self, deadline: Instant) -> Result<serde_json::Value, String> {
        match receive(&mut self.stream, deadline) {
            Ok(Frame::Start { body }) => Ok(body),
            Ok(Frame::Abort { reason }) => Err(format!("rank 0 stopped the job: {reason}")),
            Ok(_) => Err("rank 0 sent something other than the start".to_owned()),
            Err(e) => Err(format!("waiting for rank 0's start: {e}")),
        }
    }

    /// Sends rank 0 this rank's report of `step`.
    pub fn report(&mut self, step: &str, body: serde_json::Value) -> Result<(), String> {
        let frame = Frame::Report {
            step: step.to_owned(),
            body,
        };
        send(&mut self.stream, &frame, HELLO_WITHIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hello(rank: u32, size: u32) -> Hello {
        Hello {
            job: "7.0".into(),
            rank,
            size,
            host: format!("n{rank}"),
            nccl: "2.28.9".into(),
            token: None,
        }
    }

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn every_rank_joins_starts_and_reports_to_rank_0() {
        let port = free_port();
        let deadline = Instant::now() + Duration::from_secs(20);
        let members: Vec<_> = (1..3)
            .map(|rank| {
                std::thread::spawn(move || {
                    let mut m = Member::join("127.0.0.1", port, &hello(rank, 3), deadline).unwrap();
                    let start = m.started(deadline).unwrap();
                    m.report("step", json!({"rank": rank, "start": start}))
                        .unwrap();
                })
            })
            .collect();
        let mut root = Root::gather("127.0.0.1", port, &hello(0, 3), deadline).unwrap();
        assert_eq!(root.hellos().map(|h| h.rank).collect::<Vec<_>>(), [1, 2]);
        assert!(root.start(&json!("id")).is_empty());
        let reports = root.collect("step", deadline);
        for m in members {
            m.join().unwrap();
        }
        assert_eq!(reports[1].1, Ok(json!({"rank": 2, "start": "id"})));
    }

    #[test]
    fn a_rank_that_never_joins_is_named_after_the_deadline_and_the_others_are_stopped() {
        let port = free_port();
        let deadline = Instant::now() + Duration::from_millis(1500);
        let member = std::thread::spawn(move || {
            let mut m = Member::join("127.0.0.1", port, &hello(1, 3), deadline).unwrap();
            m.started(deadline + Duration::from_secs(5))
        });
        let gathered = Root::gather("127.0.0.1", port, &hello(0, 3), deadline);
        let Err(NotGathered::Missing { ranks, .. }) = gathered else {
            panic!("gathered without rank 2");
        };
        assert_eq!(ranks, [2]);
        let stopped = member.join().unwrap().unwrap_err();
        assert!(stopped.contains("rank(s) 2 never joined"), "{stopped}");
    }

    #[test]
    fn strangers_are_turned_away_and_do_not_count() {
        let port = free_port();
        let deadline = Instant::now() + Duration::from_secs(3);
        let strangers = std::thread::spawn(move || {
            let mut other_job = hello(1, 2);
            other_job.job = "8.0".into();
            let mut told = Vec::new();
            for h in [other_job, hello(5, 2), hello(1, 3)] {
                let mut m = Member::join("127.0.0.1", port, &h, deadline).unwrap();
                told.push(m.started(deadline + Duration::from_secs(5)).unwrap_err());
            }
            // Garbage, then a length past the limit: dropped, never read in full.
            let mut raw = TcpStream::connect(("127.0.0.1", port)).unwrap();
            raw.write_all(&u32::MAX.to_be_bytes()).unwrap();
            told
        });
        let gathered = Root::gather("127.0.0.1", port, &hello(0, 2), deadline);
        let told = strangers.join().unwrap();
        assert!(told[0].contains("of job 8.0"), "{told:?}");
        assert!(told[1].contains("not one of 1..2"), "{told:?}");
        assert!(told[2].contains("counts 3 rank(s)"), "{told:?}");
        let Err(NotGathered::Missing { ranks, turned_away }) = gathered else {
            panic!("a stranger counted");
        };
        assert_eq!(ranks, [1]);
        assert!(
            turned_away.iter().any(|t| t.contains("over the")),
            "{turned_away:?}"
        );
    }

    #[test]
    fn where_rank_0_has_a_token_a_hello_without_it_is_turned_away_and_never_sees_the_start() {
        let token = |t: &str| super::super::Token::new(t.to_owned());
        let mut me = hello(0, 2);
        me.token = token("0123456789abcdef0123456789abcdef");
        let port = free_port();
        let deadline = Instant::now() + Duration::from_secs(10);
        let member = {
            let right = me.token.clone();
            std::thread::spawn(move || {
                let mut told = Vec::new();
                let wrong = token("0123456789abcdef0123456789abcdeF");
                for t in [None, wrong, right] {
                    let mut h = hello(1, 2);
                    h.token = t;
                    let mut m = Member::join("127.0.0.1", port, &h, deadline).unwrap();
                    told.push(m.started(deadline));
                }
                told
            })
        };
        let mut root = Root::gather("127.0.0.1", port, &me, deadline).unwrap();
        assert!(root.start(&json!("id")).is_empty());
        let told = member.join().unwrap();
        for refused in &told[..2] {
            let why = refused.as_ref().unwrap_err();
            assert!(
                why.contains("does not hold the job's rendezvous token"),
                "{why}"
            );
        }
        assert_eq!(told[2], Ok(json!("id")));
        // Without a token of its own, rank 0 asks for none.
        let mut with = hello(1, 2);
        with.token = me.token.clone();
        assert!(welcome(&hello(0, 2), &with, &[]).is_none());
        assert!(token("short").is_none());
        assert_eq!(format!("{:?}", me.token), "Some(Token(..))");
    }

    #[test]
    fn another_nccl_is_turned_away_by_name() {
        let mut other = hello(1, 2);
        other.nccl = "2.27.7".into();
        let why = welcome(&hello(0, 2), &other, &[]).unwrap();
        assert!(
            why.contains("rank 1 on n1 runs NCCL 2.27.7, rank 0 on n0 runs 2.28.9"),
            "{why}"
        );
    }
}
