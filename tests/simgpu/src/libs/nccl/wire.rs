//! The wire between the processes of a communicator: the unique id, each rank's record, the
//! frames a rank and its root exchange over TCP, and the one rule of every socket: none is
//! bound or connected outside 127.0.0.0/8 ([`listen`] and [`connect`] check before each).
//!
//! The id is NCCL's bootstrap handle: a random 64-bit magic, then the root's `sockaddr_in`
//! (family `AF_INET`, port and address in network order), then [`MARKER`], zeros after.
//!
//! A frame is a little-endian `u32` length (at most [`MAX_FRAME`]), then that many bytes: a
//! kind, a little-endian `u64` sequence number (0 where the kind has none) and the kind's
//! payload. Every read and write has a timeout: a reader waiting for a frame asks its caller
//! every [`POLL`] whether to wait on ([`read()`]); a frame begun, or a write, must be done
//! within [`FRAME_TIMEOUT`]. Whatever does not decode is garbage, never a panic.

use super::reference::Shape;
use super::topology::Transport;
use super::types::{DataType, RedOp, FUNCTIONS};
use std::ffi::c_char;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// `NCCL_UNIQUE_ID_BYTES`.
pub const UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`: `typedef struct { char internal[128]; } ncclUniqueId;`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    pub internal: [c_char; UNIQUE_ID_BYTES],
}

/// What follows NCCL's handle (magic and `sockaddr_in6`-sized address) in an id the
/// simulator made.
pub const MARKER: [u8; 16] = *b"stackbench-simid";
/// Where [`MARKER`] lies in the id.
const MARKER_AT: usize = 40;
/// `AF_INET`, `AF_INET6`.
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// What a unique id says: the root's magic and address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    pub magic: u64,
    pub root: SocketAddrV4,
}

/// Why an id is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadId {
    /// Its address is neither `AF_INET` nor `AF_INET6` (NCCL's own check).
    Family(u16),
    /// An IPv6 root, an IPv4 one outside 127.0.0.0/8 or of port 0: never connected to.
    Address(String),
    /// No [`MARKER`]: not an id the simulator made.
    Marker,
}

impl Handle {
    /// The id carrying the handle.
    pub fn encode(&self) -> UniqueId {
        let mut bytes = [0u8; UNIQUE_ID_BYTES];
        bytes[..8].copy_from_slice(&self.magic.to_le_bytes());
        bytes[8..10].copy_from_slice(&AF_INET.to_le_bytes());
        bytes[10..12].copy_from_slice(&self.root.port().to_be_bytes());
        bytes[12..16].copy_from_slice(&self.root.ip().octets());
        bytes[MARKER_AT..MARKER_AT + MARKER.len()].copy_from_slice(&MARKER);
        UniqueId {
            internal: bytes.map(|b| b as c_char),
        }
    }

    /// The handle an id carries.
    pub fn decode(id: &UniqueId) -> Result<Handle, BadId> {
        let bytes = id.internal.map(|c| c as u8);
        let family = u16::from_le_bytes([bytes[8], bytes[9]]);
        if family != AF_INET && family != AF_INET6 {
            return Err(BadId::Family(family));
        }
        let port = u16::from_be_bytes([bytes[10], bytes[11]]);
        let ip = Ipv4Addr::new(bytes[12], bytes[13], bytes[14], bytes[15]);
        if family == AF_INET6 {
            return Err(BadId::Address("an IPv6 address".into()));
        }
        if !ip.is_loopback() || port == 0 {
            return Err(BadId::Address(socket_name(SocketAddr::from((ip, port)))));
        }
        if bytes[MARKER_AT..MARKER_AT + MARKER.len()] != MARKER {
            return Err(BadId::Marker);
        }
        let magic = u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default());
        Ok(Handle {
            magic,
            root: SocketAddrV4::new(ip, port),
        })
    }
}

/// An address as NCCL's `ncclSocketToString` writes it: `127.0.0.1<40123>`.
pub fn socket_name(address: SocketAddr) -> String {
    format!("{}<{}>", address.ip(), address.port())
}

/// A rank's record, sent to the root when it checks in and given to every rank in the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    pub rank: u32,
    pub nranks: u32,
    /// Its node's address (`[node] address`): ranks of one address are on one node.
    pub address: Ipv4Addr,
    pub pid: u32,
    /// Its CUDA device and that device's PCI bus id as NCCL's `busId` (`0x17000`).
    pub device: u32,
    pub bus_id: u64,
    /// Its process's network between nodes ([`super::net::Net`]).
    pub ib: bool,
    pub gdr: bool,
    pub ib_gbs: f64,
    pub socket_gbs: f64,
    /// The transport and rate from its device to each device of its node (by ordinal; its
    /// own is meaningless), as its profile and environment give them.
    pub peers: Vec<(Transport, f64)>,
}

/// Which frame a kind byte starts.
const HELLO: u8 = 1;
const TABLE: u8 = 2;
const CALL: u8 = 3;
const ACCEPTED: u8 = 4;
const REFUSED: u8 = 5;
const DATA: u8 = 6;
const OUTPUT: u8 = 7;
const FAIL: u8 = 8;

/// What ranks and their root say to each other.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A rank checks in: the id's magic and its record.
    Hello { magic: u64, info: Info },
    /// The root to each rank once all have checked in: every rank's record, by rank.
    Table(Vec<Info>),
    /// A rank has called collective `seq` of the communicator.
    Call { seq: u64, shape: Shape },
    /// Every rank has called `seq`, alike.
    Accepted { seq: u64 },
    /// Every rank has called `seq`, not alike: why.
    Refused { seq: u64, text: String },
    /// A rank's input to `seq` (empty where it has none), sent when its stream reaches it.
    Data { seq: u64, bytes: Vec<u8> },
    /// The root to each rank: its output of `seq`.
    Output { seq: u64, bytes: Vec<u8> },
    /// The root to each rank: the communicator has failed (NCCL's WARN text saying why).
    Fail { text: String },
}

/// The largest frame: a payload of 1 GiB and its header.
pub const MAX_FRAME: usize = (1 << 30) + 64;
/// The largest input or output of one rank that crosses processes.
pub const MAX_PAYLOAD: usize = 1 << 30;
/// How often a reader waiting for a frame asks whether to wait on.
pub const POLL: Duration = Duration::from_millis(100);
/// How long a frame, once begun, or a write may take.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(30);

impl Frame {
    /// The frame's bytes on the wire, its length first.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; 4];
        let (kind, seq) = match self {
            Frame::Hello { .. } => (HELLO, 0),
            Frame::Table(_) => (TABLE, 0),
            Frame::Call { seq, .. } => (CALL, *seq),
            Frame::Accepted { seq } => (ACCEPTED, *seq),
            Frame::Refused { seq, .. } => (REFUSED, *seq),
            Frame::Data { seq, .. } => (DATA, *seq),
            Frame::Output { seq, .. } => (OUTPUT, *seq),
            Frame::Fail { .. } => (FAIL, 0),
        };
        out.push(kind);
        out.extend_from_slice(&seq.to_le_bytes());
        match self {
            Frame::Hello { magic, info } => {
                out.extend_from_slice(&magic.to_le_bytes());
                put_info(&mut out, info);
            }
            Frame::Table(table) => {
                out.extend_from_slice(&(table.len() as u32).to_le_bytes());
                table.iter().for_each(|info| put_info(&mut out, info));
            }
            Frame::Call { shape, .. } => {
                out.extend_from_slice(&[
                    shape.function as u8,
                    shape.datatype as u8,
                    shape.op as u8,
                ]);
                out.extend_from_slice(&(shape.count as u64).to_le_bytes());
                out.extend_from_slice(&(shape.nranks as u32).to_le_bytes());
                out.extend_from_slice(&(shape.root as u32).to_le_bytes());
            }
            Frame::Accepted { .. } => {}
            Frame::Refused { text, .. } | Frame::Fail { text } => {
                out.extend_from_slice(text.as_bytes())
            }
            Frame::Data { bytes, .. } | Frame::Output { bytes, .. } => out.extend_from_slice(bytes),
        }
        let len = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&len.to_le_bytes());
        out
    }

    /// The frame of `body` (the bytes after the length), or why it is garbage.
    pub fn decode(body: &[u8]) -> Result<Frame, String> {
        let mut at = Cursor { bytes: body };
        let kind = at.u8()?;
        let seq = at.u64()?;
        let frame = match kind {
            HELLO => Frame::Hello {
                magic: at.u64()?,
                info: at.info()?,
            },
            TABLE => {
                let n = at.u32()? as usize;
                // Each record is at least 50 bytes: a count beyond the frame is garbage.
                if n > body.len() / 50 {
                    return Err(format!("a table of {n} ranks in {} bytes", body.len()));
                }
                Frame::Table((0..n).map(|_| at.info()).collect::<Result<_, _>>()?)
            }
            CALL => {
                let function = *FUNCTIONS
                    .get(usize::from(at.u8()?))
                    .ok_or("an unknown collective")?;
                let datatype =
                    DataType::from_raw(at.u8()?.into()).map_err(|_| "an unknown data type")?;
                let op = RedOp::from_raw(at.u8()?.into()).ok_or("an unknown operation")?;
                Frame::Call {
                    seq,
                    shape: Shape {
                        function,
                        datatype,
                        op,
                        count: at.u64()? as usize,
                        nranks: at.u32()? as usize,
                        root: at.u32()? as usize,
                    },
                }
            }
            ACCEPTED => Frame::Accepted { seq },
            REFUSED => Frame::Refused {
                seq,
                text: at.text(),
            },
            DATA => Frame::Data {
                seq,
                bytes: at.rest(),
            },
            OUTPUT => Frame::Output {
                seq,
                bytes: at.rest(),
            },
            FAIL => Frame::Fail { text: at.text() },
            other => return Err(format!("a frame of unknown kind {other}")),
        };
        if !at.bytes.is_empty() {
            return Err(format!(
                "{} bytes after a frame of kind {kind}",
                at.bytes.len()
            ));
        }
        Ok(frame)
    }
}

fn put_info(out: &mut Vec<u8>, info: &Info) {
    out.extend_from_slice(&info.rank.to_le_bytes());
    out.extend_from_slice(&info.nranks.to_le_bytes());
    out.extend_from_slice(&info.address.octets());
    out.extend_from_slice(&info.pid.to_le_bytes());
    out.extend_from_slice(&info.device.to_le_bytes());
    out.extend_from_slice(&info.bus_id.to_le_bytes());
    out.extend_from_slice(&[u8::from(info.ib), u8::from(info.gdr)]);
    out.extend_from_slice(&info.ib_gbs.to_le_bytes());
    out.extend_from_slice(&info.socket_gbs.to_le_bytes());
    out.extend_from_slice(&(info.peers.len() as u32).to_le_bytes());
    for (transport, gbs) in &info.peers {
        out.push(transport_code(*transport));
        out.extend_from_slice(&gbs.to_le_bytes());
    }
}

/// A transport as one byte.
fn transport_code(transport: Transport) -> u8 {
    match transport {
        Transport::P2p {
            nvlink,
            read,
            direct,
        } => 1 | u8::from(nvlink) << 1 | u8::from(read) << 2 | u8::from(direct) << 3,
        Transport::Shm => 16,
        Transport::Net => 32,
        Transport::Nic { ib, gdr } => 64 | u8::from(ib) << 1 | u8::from(gdr) << 2,
    }
}

fn transport_of(code: u8) -> Option<Transport> {
    let bit = |n: u8| code & (1 << n) != 0;
    match code {
        0..=15 if bit(0) => Some(Transport::P2p {
            nvlink: bit(1),
            read: bit(2),
            direct: bit(3),
        }),
        16 => Some(Transport::Shm),
        32 => Some(Transport::Net),
        64..=71 if !bit(0) => Some(Transport::Nic {
            ib: bit(1),
            gdr: bit(2),
        }),
        _ => None,
    }
}

/// Bytes being decoded; running short is garbage.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (head, rest) = (self.bytes.split_first_chunk::<N>()).ok_or("a frame cut short")?;
        self.bytes = rest;
        Ok(*head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.take().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.take().map(u64::from_le_bytes)
    }

    fn f64(&mut self) -> Result<f64, String> {
        self.take().map(f64::from_le_bytes)
    }

    fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes).to_vec()
    }

    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.rest()).into_owned()
    }

    fn info(&mut self) -> Result<Info, String> {
        let (rank, nranks) = (self.u32()?, self.u32()?);
        let address = Ipv4Addr::from(self.take::<4>()?);
        let (pid, device, bus_id) = (self.u32()?, self.u32()?, self.u64()?);
        let [ib, gdr] = self.take::<2>()?;
        let (ib_gbs, socket_gbs) = (self.f64()?, self.f64()?);
        let n = self.u32()? as usize;
        if n > self.bytes.len() / 9 {
            return Err(format!("{n} peers in {} bytes", self.bytes.len()));
        }
        let peers = (0..n)
            .map(|_| {
                let transport = transport_of(self.u8()?).ok_or("an unknown transport")?;
                Ok((transport, self.f64()?))
            })
            .collect::<Result<_, String>>()?;
        Ok(Info {
            rank,
            nranks,
            address,
            pid,
            device,
            bus_id,
            ib: ib != 0,
            gdr: gdr != 0,
            ib_gbs,
            socket_gbs,
            peers,
        })
    }
}

/// Refuses an address outside 127.0.0.0/8.
fn loopback(address: SocketAddrV4) -> io::Result<()> {
    if address.ip().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{address} is outside 127.0.0.0/8"),
        ))
    }
}

/// A listener on `ip`, at a port the system picks.
pub fn listen(ip: Ipv4Addr) -> io::Result<TcpListener> {
    let address = SocketAddrV4::new(ip, 0);
    loopback(address)?;
    TcpListener::bind(address)
}

/// One attempt to connect to `address`, ready for [`read()`] and [`write()`].
pub fn connect(address: SocketAddrV4) -> io::Result<TcpStream> {
    loopback(address)?;
    let stream = TcpStream::connect_timeout(&address.into(), FRAME_TIMEOUT)?;
    prepare(&stream)?;
    Ok(stream)
}

/// Sets a stream's timeouts for [`read()`] and [`write()`].
pub fn prepare(stream: &TcpStream) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(FRAME_TIMEOUT))?;
    stream.set_nodelay(true)
}

/// Why a stream gave no frame.
#[derive(Debug)]
pub enum Broken {
    /// The peer closed it.
    Closed,
    /// The caller stopped waiting for a frame.
    Stopped,
    /// What came is no frame: why.
    Garbage(String),
    /// A read or write failed, or a frame begun did not finish in time.
    Failed(io::Error),
}

impl Broken {
    /// NCCL's WARN text for it, on the stream to `peer` (`127.0.0.1<40123>`).
    pub fn text(&self, peer: &str, sending: bool) -> String {
        match self {
            Broken::Closed | Broken::Stopped => {
                format!("socketProgress: Connection closed by remote peer {peer}")
            }
            Broken::Garbage(_) => "NET/Socket : socket progress error".into(),
            Broken::Failed(e) => {
                let way = if sending { "send to" } else { "recv from" };
                format!(
                    "socketProgressOpt: Call to {way} {peer} failed : {}",
                    error_text(e)
                )
            }
        }
    }
}

/// An I/O error as `strerror` words the common ones.
pub fn error_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "Connection refused".into(),
        io::ErrorKind::ConnectionReset => "Connection reset by peer".into(),
        io::ErrorKind::BrokenPipe => "Broken pipe".into(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => "Connection timed out".into(),
        _ => e.to_string(),
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Writes `frame`, all of it within [`FRAME_TIMEOUT`].
pub fn write(stream: &mut TcpStream, frame: &Frame) -> Result<(), Broken> {
    let bytes = frame.encode();
    let started = Instant::now();
    let mut sent = 0;
    while sent < bytes.len() {
        match stream.write(&bytes[sent..]) {
            Ok(0) => return Err(Broken::Closed),
            Ok(n) => sent += n,
            Err(e) if timed_out(&e) && started.elapsed() < FRAME_TIMEOUT => {}
            Err(e) => return Err(Broken::Failed(e)),
        }
    }
    Ok(())
}

/// The next frame. Until one begins, `wait_on` is asked every [`POLL`] whether to wait on
/// (`false`: [`Broken::Stopped`]); once begun, it must end within [`FRAME_TIMEOUT`]. The body is
/// read as it comes, so a garbage length allocates no more than the bytes that really came.
pub fn read(stream: &mut TcpStream, mut wait_on: impl FnMut() -> bool) -> Result<Frame, Broken> {
    let mut head = [0u8; 4];
    let mut got = 0;
    let mut begun: Option<Instant> = None;
    while got < head.len() {
        match stream.read(&mut head[got..]) {
            Ok(0) => return Err(Broken::Closed),
            Ok(n) => {
                got += n;
                begun.get_or_insert_with(Instant::now);
            }
            Err(e) if timed_out(&e) => match begun {
                None if !wait_on() => return Err(Broken::Stopped),
                Some(at) if at.elapsed() > FRAME_TIMEOUT => return Err(Broken::Failed(e)),
                _ => {}
            },
            Err(e) => return Err(Broken::Failed(e)),
        }
    }
    let started = begun.unwrap_or_else(Instant::now);
    let len = u32::from_le_bytes(head) as usize;
    if !(9..=MAX_FRAME).contains(&len) {
        return Err(Broken::Garbage(format!("a frame of {len} bytes")));
    }
    let mut body = Vec::new();
    while body.len() < len {
        let want = (len - body.len()) as u64;
        match Read::by_ref(stream).take(want).read_to_end(&mut body) {
            Ok(_) if body.len() < len => return Err(Broken::Closed),
            Ok(_) => {}
            Err(e) if timed_out(&e) && started.elapsed() < FRAME_TIMEOUT => {}
            Err(e) => return Err(Broken::Failed(e)),
        }
    }
    Frame::decode(&body).map_err(Broken::Garbage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libs::nccl::types::Function;

    fn info() -> Info {
        Info {
            rank: 3,
            nranks: 4,
            address: Ipv4Addr::new(127, 0, 0, 3),
            pid: 42,
            device: 1,
            bus_id: 0x2a000,
            ib: true,
            gdr: false,
            ib_gbs: 50.0,
            socket_gbs: 3.125,
            peers: vec![
                (
                    Transport::P2p {
                        nvlink: true,
                        read: false,
                        direct: true,
                    },
                    450.0,
                ),
                (Transport::Shm, 12.5),
            ],
        }
    }

    #[test]
    fn ids_carry_nccl_s_handle_and_refuse_what_is_not_one() {
        let handle = Handle {
            magic: 0x0123_4567_89ab_cdef,
            root: SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), 40123),
        };
        let id = handle.encode();
        let bytes = id.internal.map(|c| c as u8);
        assert_eq!(&bytes[8..16], &[2, 0, 0x9c, 0xbb, 127, 0, 0, 2]);
        assert_eq!(Handle::decode(&id), Ok(handle));
        let mut garbage = id;
        garbage.internal[8] = 0x55;
        assert_eq!(Handle::decode(&garbage), Err(BadId::Family(0x55)));
        let mut outside = id;
        outside.internal[12] = 10;
        assert_eq!(
            Handle::decode(&outside),
            Err(BadId::Address("10.0.0.2<40123>".into()))
        );
        let mut unmarked = id;
        unmarked.internal[MARKER_AT] = 0;
        assert_eq!(Handle::decode(&unmarked), Err(BadId::Marker));
        let zeros = UniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        assert_eq!(Handle::decode(&zeros), Err(BadId::Family(0)));
    }

    #[test]
    fn frames_round_trip_and_garbage_is_an_error() {
        let shape = Shape {
            function: Function::ReduceScatter,
            datatype: DataType::Bfloat16,
            op: RedOp::Avg,
            count: 1 << 33,
            nranks: 8,
            root: 5,
        };
        let frames = [
            Frame::Hello {
                magic: 7,
                info: info(),
            },
            Frame::Table(vec![info(), info()]),
            Frame::Call { seq: 9, shape },
            Frame::Accepted { seq: 9 },
            Frame::Refused {
                seq: 9,
                text: "why".into(),
            },
            Frame::Data {
                seq: 10,
                bytes: vec![1, 2, 3],
            },
            Frame::Output {
                seq: 10,
                bytes: Vec::new(),
            },
            Frame::Fail {
                text: "gone".into(),
            },
        ];
        for frame in frames {
            let bytes = frame.encode();
            let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
            assert_eq!(len, bytes.len() - 4);
            assert_eq!(Frame::decode(&bytes[4..]), Ok(frame.clone()));
            if !matches!(frame, Frame::Data { .. } | Frame::Output { .. }) {
                for cut in [5, bytes.len() - 1] {
                    let short = Frame::decode(&bytes[4..cut]);
                    assert!(
                        short.is_err()
                            || matches!(frame, Frame::Refused { .. } | Frame::Fail { .. }),
                        "{frame:?} cut at {cut}: {short:?}"
                    );
                }
            }
        }
        assert!(Frame::decode(&[99, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(Frame::decode(&[TABLE, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]).is_err());
    }

    #[test]
    fn no_socket_leaves_the_loopback_and_a_stream_reads_what_was_written() {
        assert!(listen(Ipv4Addr::new(10, 0, 0, 1)).is_err());
        assert!(connect(SocketAddrV4::new(Ipv4Addr::new(192, 168, 0, 1), 1)).is_err());
        let listener = listen(Ipv4Addr::new(127, 0, 0, 5)).unwrap();
        let SocketAddr::V4(at) = listener.local_addr().unwrap() else {
            panic!("an IPv4 listener");
        };
        let mut client = connect(at).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        prepare(&server).unwrap();
        let frame = Frame::Data {
            seq: 1,
            bytes: vec![7; 100_000],
        };
        write(&mut client, &frame).unwrap();
        assert_eq!(read(&mut server, || true).unwrap(), frame);
        let mut polls = 0;
        let stopped = read(&mut server, || {
            polls += 1;
            polls < 3
        });
        assert!(matches!(stopped, Err(Broken::Stopped)), "{stopped:?}");
        client.write_all(&u32::MAX.to_le_bytes()).unwrap();
        assert!(matches!(
            read(&mut server, || true),
            Err(Broken::Garbage(_))
        ));
        drop(client);
        assert!(matches!(read(&mut server, || true), Err(Broken::Closed)));
    }
}
