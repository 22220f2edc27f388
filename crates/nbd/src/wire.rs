//! The NBD protocol on the wire, as its specification writes it
//! (NetworkBlockDevice/nbd, doc/proto.md): the magic numbers, the option,
//! reply, command and flag values this server and its client speak, and the
//! messages, each read and written here and nowhere else. Every integer is
//! big-endian ("network byte order").
//!
//! Handshake (fixed newstyle):
//!
//! ```text
//! S: u64 NBDMAGIC  u64 IHAVEOPT  u16 handshake flags (FIXED_NEWSTYLE | NO_ZEROES)
//! C: u32 client flags
//! C: u64 IHAVEOPT  u32 option  u32 length  [length bytes]          (repeated)
//! S: u64 REPLY_MAGIC  u32 option  u32 reply type  u32 length  [data] (per option)
//! ```
//!
//! Transmission:
//!
//! ```text
//! C: u32 REQUEST_MAGIC  u16 command flags  u16 type  u64 handle  u64 offset  u32 length  [data]
//! S: u32 SIMPLE_REPLY_MAGIC  u32 error  u64 handle  [data]
//! S: u32 STRUCTURED_REPLY_MAGIC  u16 flags  u16 type  u64 handle  u32 length  [payload]
//! ```

use std::io::{self, Read, Write};

pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flags (server).
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flags.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Transmission flags.
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_SEND_DF: u16 = 1 << 7;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

/// Option replies.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
const REP_ERR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_ERR + 1;
pub const REP_ERR_POLICY: u32 = REP_ERR + 2;
pub const REP_ERR_INVALID: u32 = REP_ERR + 3;
pub const REP_ERR_UNKNOWN: u32 = REP_ERR + 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_ERR + 7;
pub const REP_ERR_TOO_BIG: u32 = REP_ERR + 9;

/// Information types of `NBD_REP_INFO`.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

/// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const CMD_FLAG_DF: u16 = 1 << 2;

/// Structured reply flags and types.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;
pub const REPLY_TYPE_ERROR_OFFSET: u16 = (1 << 15) + 2;

/// Error values (the specification's restricted set of errno numbers).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ESHUTDOWN: u32 = 108;

/// Longest string (export name, message) the specification allows.
pub const STRING_MAX: usize = 4096;
/// Longest option payload this server reads: an `NBD_OPT_GO` carries a
/// name of at most 4,096 bytes and a list of information requests.
pub const OPTION_DATA_MAX: u32 = 16 * 1024;

pub fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// Reads `len` bytes (a length the caller has bounded).
pub fn read_vec(r: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut v = vec![0u8; len];
    r.read_exact(&mut v)?;
    Ok(v)
}

/// An option as the client sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionRequest {
    pub option: u32,
    pub data: Vec<u8>,
}

/// Why an option could not even be read: the connection is closed.
#[derive(Debug)]
pub enum OptionReadError {
    Io(io::Error),
    /// Not `IHAVEOPT`: the client does not speak newstyle.
    BadMagic(u64),
    /// Longer than any option this server knows.
    TooLong {
        option: u32,
        len: u32,
    },
}

impl From<io::Error> for OptionReadError {
    fn from(e: io::Error) -> Self {
        OptionReadError::Io(e)
    }
}

impl OptionRequest {
    pub fn read(r: &mut impl Read) -> Result<OptionRequest, OptionReadError> {
        let magic = read_u64(r)?;
        if magic != IHAVEOPT {
            return Err(OptionReadError::BadMagic(magic));
        }
        let option = read_u32(r)?;
        let len = read_u32(r)?;
        if len > OPTION_DATA_MAX {
            return Err(OptionReadError::TooLong { option, len });
        }
        Ok(OptionRequest {
            option,
            data: read_vec(r, len as usize)?,
        })
    }

    /// One message: the header and the data.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let mut m = Vec::with_capacity(16 + self.data.len());
        m.extend_from_slice(&IHAVEOPT.to_be_bytes());
        m.extend_from_slice(&self.option.to_be_bytes());
        m.extend_from_slice(&(self.data.len() as u32).to_be_bytes());
        m.extend_from_slice(&self.data);
        w.write_all(&m)
    }
}

/// Writes an option reply: header and data as one write.
pub fn write_option_reply(w: &mut impl Write, option: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&option.to_be_bytes());
    m.extend_from_slice(&reply.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    w.write_all(&m)
}

/// An option reply as the client reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionReply {
    pub option: u32,
    pub reply: u32,
    pub data: Vec<u8>,
}

impl OptionReply {
    pub fn read(r: &mut impl Read) -> io::Result<OptionReply> {
        let magic = read_u64(r)?;
        if magic != OPT_REPLY_MAGIC {
            return Err(invalid(format!("option reply magic {magic:#x}")));
        }
        let option = read_u32(r)?;
        let reply = read_u32(r)?;
        let len = read_u32(r)?;
        if len > OPTION_DATA_MAX {
            return Err(invalid(format!("option reply of {len} bytes")));
        }
        Ok(OptionReply {
            option,
            reply,
            data: read_vec(r, len as usize)?,
        })
    }

    pub fn is_error(&self) -> bool {
        self.reply & REP_ERR != 0
    }
}

pub fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The export as `NBD_INFO_EXPORT` (and `NBD_OPT_EXPORT_NAME`'s reply) give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    pub size: u64,
    pub flags: u16,
}

/// `NBD_INFO_BLOCK_SIZE`: the sizes a request should respect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSizes {
    pub minimum: u32,
    pub preferred: u32,
    pub maximum: u32,
}

/// The data of an `NBD_REP_INFO` reply of each type.
pub fn info_export(e: ExportInfo) -> Vec<u8> {
    let mut d = INFO_EXPORT.to_be_bytes().to_vec();
    d.extend_from_slice(&e.size.to_be_bytes());
    d.extend_from_slice(&e.flags.to_be_bytes());
    d
}

pub fn info_string(kind: u16, s: &str) -> Vec<u8> {
    let mut d = kind.to_be_bytes().to_vec();
    d.extend_from_slice(s.as_bytes());
    d
}

pub fn info_block_size(b: BlockSizes) -> Vec<u8> {
    let mut d = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    for v in [b.minimum, b.preferred, b.maximum] {
        d.extend_from_slice(&v.to_be_bytes());
    }
    d
}

/// A request's header (the data of a write follows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub kind: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

pub const REQUEST_HEADER_LEN: usize = 28;

impl Request {
    /// Reads a header; a wrong magic number is `InvalidData` (the
    /// connection cannot be trusted to be in step any more).
    pub fn read(r: &mut impl Read) -> io::Result<Request> {
        let mut h = [0u8; REQUEST_HEADER_LEN];
        r.read_exact(&mut h)?;
        let magic = u32::from_be_bytes(h[0..4].try_into().expect("4 bytes"));
        if magic != REQUEST_MAGIC {
            return Err(invalid(format!("request magic {magic:#x}")));
        }
        Ok(Request {
            flags: u16::from_be_bytes(h[4..6].try_into().expect("2 bytes")),
            kind: u16::from_be_bytes(h[6..8].try_into().expect("2 bytes")),
            handle: u64::from_be_bytes(h[8..16].try_into().expect("8 bytes")),
            offset: u64::from_be_bytes(h[16..24].try_into().expect("8 bytes")),
            length: u32::from_be_bytes(h[24..28].try_into().expect("4 bytes")),
        })
    }

    pub fn encode(&self) -> [u8; REQUEST_HEADER_LEN] {
        let mut h = [0u8; REQUEST_HEADER_LEN];
        h[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        h[4..6].copy_from_slice(&self.flags.to_be_bytes());
        h[6..8].copy_from_slice(&self.kind.to_be_bytes());
        h[8..16].copy_from_slice(&self.handle.to_be_bytes());
        h[16..24].copy_from_slice(&self.offset.to_be_bytes());
        h[24..28].copy_from_slice(&self.length.to_be_bytes());
        h
    }
}

/// A simple reply's header (a successful read's data follows it).
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    h[4..8].copy_from_slice(&error.to_be_bytes());
    h[8..16].copy_from_slice(&handle.to_be_bytes());
    h
}

/// A structured reply chunk's header (its payload follows it).
pub fn structured_header(flags: u16, kind: u16, handle: u64, length: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    h[4..6].copy_from_slice(&flags.to_be_bytes());
    h[6..8].copy_from_slice(&kind.to_be_bytes());
    h[8..16].copy_from_slice(&handle.to_be_bytes());
    h[16..20].copy_from_slice(&length.to_be_bytes());
    h
}

/// The payload of an `NBD_REPLY_TYPE_ERROR` chunk: the error and a message.
pub fn error_payload(error: u32, message: &str) -> Vec<u8> {
    let msg = &message.as_bytes()[..message.len().min(STRING_MAX)];
    let mut p = error.to_be_bytes().to_vec();
    p.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    p.extend_from_slice(msg);
    p
}

/// A reply as the client reads it: simple, or one structured chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple reply; a read's data is read by the caller, who knows its length.
    Simple { error: u32, handle: u64 },
    Chunk {
        flags: u16,
        kind: u16,
        handle: u64,
        payload: Vec<u8>,
    },
}

impl Reply {
    /// Reads one reply header (and a chunk's payload, at most `payload_max` bytes).
    pub fn read(r: &mut impl Read, payload_max: u32) -> io::Result<Reply> {
        match read_u32(r)? {
            SIMPLE_REPLY_MAGIC => Ok(Reply::Simple {
                error: read_u32(r)?,
                handle: read_u64(r)?,
            }),
            STRUCTURED_REPLY_MAGIC => {
                let flags = read_u16(r)?;
                let kind = read_u16(r)?;
                let handle = read_u64(r)?;
                let len = read_u32(r)?;
                if len > payload_max {
                    return Err(invalid(format!("structured reply of {len} bytes")));
                }
                Ok(Reply::Chunk {
                    flags,
                    kind,
                    handle,
                    payload: read_vec(r, len as usize)?,
                })
            }
            m => Err(invalid(format!("reply magic {m:#x}"))),
        }
    }
}

/// The name of an errno value the specification defines, for messages.
pub fn error_name(e: u32) -> &'static str {
    match e {
        EPERM => "EPERM",
        EIO => "EIO",
        EINVAL => "EINVAL",
        ENOSPC => "ENOSPC",
        EOVERFLOW => "EOVERFLOW",
        ESHUTDOWN => "ESHUTDOWN",
        12 => "ENOMEM",
        _ => "error",
    }
}
