//! A client of the NBD protocol, the client's half of what `handshake.rs`
//! and `transmission.rs` serve: the tests drive the server through it as
//! a user's tools would (no system package needed), and it gives them the
//! raw steps too (a single option, a request with any flags or length).

use crate::wire::*;
use std::io::{self, Read, Write};

/// What a request came back with.
#[derive(Debug)]
pub enum ClientError {
    /// The connection failed or closed.
    Io(io::Error),
    /// The server answered with an error (and, in a structured reply, a message).
    Nbd { errno: u32, message: String },
}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "connection: {e}"),
            ClientError::Nbd { errno, message } => write!(f, "{} ({errno}): {message}", error_name(*errno)),
        }
    }
}

impl ClientError {
    pub fn errno(&self) -> Option<u32> {
        match self {
            ClientError::Nbd { errno, .. } => Some(*errno),
            ClientError::Io(_) => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// How to pick the export.
#[derive(Clone, Debug)]
pub struct Options {
    pub export: String,
    /// Ask for structured replies first.
    pub structured: bool,
    /// Ask for `NBD_INFO_BLOCK_SIZE` (and so promise to respect it).
    pub block_sizes: bool,
    /// Enter with `NBD_OPT_EXPORT_NAME` instead of `NBD_OPT_GO`.
    pub export_name: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            export: String::new(),
            structured: true,
            block_sizes: true,
            export_name: false,
        }
    }
}

/// The handshake's first steps, for tests of option haggling.
pub struct Haggle<S> {
    pub s: S,
    pub handshake_flags: u16,
}

impl<S: Read + Write> Haggle<S> {
    /// Reads the greeting and answers with fixed newstyle and no zeroes.
    pub fn start(mut s: S) -> io::Result<Haggle<S>> {
        if read_u64(&mut s)? != NBDMAGIC || read_u64(&mut s)? != IHAVEOPT {
            return Err(invalid("not a newstyle NBD server".to_string()));
        }
        let handshake_flags = read_u16(&mut s)?;
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes())?;
        Ok(Haggle { s, handshake_flags })
    }

    /// Sends an option and reads its replies up to the final one (an ACK or an error).
    pub fn option(&mut self, option: u32, data: &[u8]) -> io::Result<Vec<OptionReply>> {
        OptionRequest {
            option,
            data: data.to_vec(),
        }
        .write(&mut self.s)?;
        let mut replies = Vec::new();
        loop {
            let r = OptionReply::read(&mut self.s)?;
            let last = r.reply == REP_ACK || r.is_error();
            replies.push(r);
            if last {
                return Ok(replies);
            }
        }
    }
}

/// The data of `NBD_OPT_INFO` / `NBD_OPT_GO`.
pub fn info_request(name: &str, requests: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
    for r in requests {
        d.extend_from_slice(&r.to_be_bytes());
    }
    d
}

/// A client in the transmission phase.
pub struct Client<S> {
    s: S,
    pub size: u64,
    pub flags: u16,
    pub structured: bool,
    pub block_sizes: Option<BlockSizes>,
    next_handle: u64,
}

impl<S: Read + Write> Client<S> {
    /// Runs the handshake as `o` says.
    pub fn connect(s: S, o: &Options) -> Result<Client<S>> {
        let mut h = Haggle::start(s)?;
        let mut structured = false;
        if o.structured {
            structured = h.option(OPT_STRUCTURED_REPLY, &[])?.last().is_some_and(|r| r.reply == REP_ACK);
        }
        if o.export_name {
            OptionRequest {
                option: OPT_EXPORT_NAME,
                data: o.export.as_bytes().to_vec(),
            }
            .write(&mut h.s)?;
            let size = read_u64(&mut h.s)?;
            let flags = read_u16(&mut h.s)?;
            return Ok(Client::new(h.s, size, flags, structured, None));
        }
        let requests: &[u16] = if o.block_sizes { &[INFO_BLOCK_SIZE] } else { &[] };
        let replies = h.option(OPT_GO, &info_request(&o.export, requests))?;
        let (mut size, mut flags, mut block) = (None, 0, None);
        for r in &replies {
            if r.is_error() {
                return Err(ClientError::Nbd {
                    errno: r.reply,
                    message: String::from_utf8_lossy(&r.data).into_owned(),
                });
            }
            match (r.reply, r.data.get(0..2).map(|t| u16::from_be_bytes([t[0], t[1]]))) {
                (REP_INFO, Some(INFO_EXPORT)) if r.data.len() == 12 => {
                    size = Some(u64::from_be_bytes(r.data[2..10].try_into().expect("8 bytes")));
                    flags = u16::from_be_bytes([r.data[10], r.data[11]]);
                }
                (REP_INFO, Some(INFO_BLOCK_SIZE)) if r.data.len() == 14 => {
                    let v = |i: usize| u32::from_be_bytes(r.data[i..i + 4].try_into().expect("4 bytes"));
                    block = Some(BlockSizes {
                        minimum: v(2),
                        preferred: v(6),
                        maximum: v(10),
                    });
                }
                _ => {}
            }
        }
        let size = size.ok_or_else(|| invalid("NBD_OPT_GO without NBD_INFO_EXPORT".to_string()))?;
        Ok(Client::new(h.s, size, flags, structured, block))
    }

    fn new(s: S, size: u64, flags: u16, structured: bool, block_sizes: Option<BlockSizes>) -> Client<S> {
        Client {
            s,
            size,
            flags,
            structured,
            block_sizes,
            next_handle: 1,
        }
    }

    /// Sends a request with any flags and length (`data` follows a write).
    pub fn send(&mut self, kind: u16, flags: u16, offset: u64, length: u32, data: &[u8]) -> io::Result<u64> {
        let handle = self.next_handle;
        self.next_handle += 1;
        let mut m = Request {
            flags,
            kind,
            handle,
            offset,
            length,
        }
        .encode()
        .to_vec();
        m.extend_from_slice(data);
        self.s.write_all(&m)?;
        Ok(handle)
    }

    /// Reads the reply to `handle`: the data of a read of `read_len` bytes.
    pub fn reply(&mut self, handle: u64, read_len: Option<u32>) -> Result<Vec<u8>> {
        let mut data = Vec::new();
        loop {
            let r = Reply::read(&mut self.s, MAX_CHUNK)?;
            match r {
                Reply::Simple { error, handle: h } => {
                    check_handle(h, handle)?;
                    if error != 0 {
                        return Err(ClientError::Nbd {
                            errno: error,
                            message: String::new(),
                        });
                    }
                    if let Some(n) = read_len {
                        data = read_vec(&mut self.s, n as usize)?;
                    }
                    return Ok(data);
                }
                Reply::Chunk {
                    flags,
                    kind,
                    handle: h,
                    payload,
                } => {
                    check_handle(h, handle)?;
                    match kind {
                        REPLY_TYPE_OFFSET_DATA if payload.len() >= 8 => data.extend_from_slice(&payload[8..]),
                        REPLY_TYPE_ERROR | REPLY_TYPE_ERROR_OFFSET => return Err(chunk_error(&payload)),
                        _ => {}
                    }
                    if flags & REPLY_FLAG_DONE != 0 {
                        return Ok(data);
                    }
                }
            }
        }
    }

    pub fn read(&mut self, offset: u64, len: u32) -> Result<Vec<u8>> {
        let h = self.send(CMD_READ, 0, offset, len, &[])?;
        self.reply(h, Some(len))
    }

    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<()> {
        let h = self.send(CMD_WRITE, if fua { CMD_FLAG_FUA } else { 0 }, offset, data.len() as u32, data)?;
        self.reply(h, None).map(|_| ())
    }

    pub fn flush(&mut self) -> Result<()> {
        let h = self.send(CMD_FLUSH, 0, 0, 0, &[])?;
        self.reply(h, None).map(|_| ())
    }

    pub fn trim(&mut self, offset: u64, len: u32) -> Result<()> {
        let h = self.send(CMD_TRIM, 0, offset, len, &[])?;
        self.reply(h, None).map(|_| ())
    }

    pub fn write_zeroes(&mut self, offset: u64, len: u32) -> Result<()> {
        let h = self.send(CMD_WRITE_ZEROES, 0, offset, len, &[])?;
        self.reply(h, None).map(|_| ())
    }

    /// `NBD_CMD_DISC`, then waits for the server to close.
    pub fn disconnect(mut self) -> io::Result<()> {
        self.send(CMD_DISC, 0, 0, 0, &[])?;
        let mut rest = Vec::new();
        self.s.read_to_end(&mut rest)?;
        Ok(())
    }

    /// The socket, for tests that send bytes no client would.
    pub fn stream(&mut self) -> &mut S {
        &mut self.s
    }
}

/// The largest reply chunk the client reads: a read of the largest request.
const MAX_CHUNK: u32 = crate::export::MAX_PAYLOAD + 8;

fn check_handle(got: u64, want: u64) -> io::Result<()> {
    if got != want {
        return Err(invalid(format!("reply to handle {got}, expected {want}")));
    }
    Ok(())
}

fn chunk_error(p: &[u8]) -> ClientError {
    let errno = p.get(0..4).map_or(EIO, |b| u32::from_be_bytes(b.try_into().expect("4 bytes")));
    let len = p.get(4..6).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]) as usize);
    let message = p
        .get(6..6 + len)
        .map(|m| String::from_utf8_lossy(m).into_owned())
        .unwrap_or_default();
    ClientError::Nbd { errno, message }
}
