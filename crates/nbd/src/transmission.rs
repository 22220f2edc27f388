//! The transmission phase of one connection: requests read, checked,
//! run on the export, answered. A request that cannot be trusted to leave
//! the stream in step (a bad magic number, a write longer than the largest
//! request) ends the connection; every other bad request gets an error
//! reply and the connection goes on.

use crate::export::{CommandError, Failure, MAX_PAYLOAD};
use crate::handshake::{lock, Negotiated, SECTOR};
use crate::server::Shared;
use crate::wire::*;
use std::io::{self, Read, Write};

/// How a connection ended.
#[derive(Debug)]
pub enum End {
    /// `NBD_CMD_DISC`.
    Disconnect,
    /// The socket closed or failed (a cut drops connections this way too).
    Io(io::Error),
    /// The client broke the protocol; the message says how.
    Violation(String),
    /// Power went while the command ran: dropped without a reply.
    PowerGone,
}

/// Serves requests until the connection ends. `generation`: the power
/// generation the connection was opened in; a request that finds power
/// cut since (and maybe back on) is dropped, never run on the new device.
pub fn serve<S: Read + Write>(s: &mut S, shared: &Shared, n: Negotiated, generation: u64) -> End {
    loop {
        let req = match Request::read(s) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => return End::Violation(e.to_string()),
            Err(e) => return End::Io(e),
        };
        if req.kind == CMD_DISC {
            return End::Disconnect;
        }
        let data = if req.kind == CMD_WRITE {
            if req.length > MAX_PAYLOAD {
                return End::Violation(format!("a write of {} bytes, over the {MAX_PAYLOAD}-byte maximum", req.length));
            }
            match read_vec(s, req.length as usize) {
                Ok(d) => Some(d),
                Err(e) => return End::Io(e),
            }
        } else {
            None
        };
        let result = match check(&req, &n) {
            Err(e) => Err(Failure::Error(e)),
            Ok(()) => run(shared, &req, data.as_deref(), generation),
        };
        let reply = match result {
            Err(Failure::PowerGone) => {
                shared.drop_stale_connections();
                return End::PowerGone;
            }
            Ok(read_data) => ok_reply(&req, &n, read_data),
            Err(Failure::Error(e)) => error_reply(&req, &n, &e),
        };
        if let Err(e) = s.write_all(&reply) {
            return End::Io(e);
        }
    }
}

fn error(errno: u32, message: impl Into<String>) -> CommandError {
    CommandError {
        errno,
        message: message.into(),
    }
}

/// The checks every request passes before it reaches the device.
fn check(req: &Request, n: &Negotiated) -> Result<(), CommandError> {
    let allowed = match req.kind {
        CMD_READ if n.structured => CMD_FLAG_FUA | CMD_FLAG_DF,
        CMD_READ | CMD_WRITE | CMD_FLUSH | CMD_TRIM => CMD_FLAG_FUA,
        CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        k => return Err(error(EINVAL, format!("unknown command {k}"))),
    };
    if req.flags & !allowed != 0 {
        return Err(error(EINVAL, format!("command flags {:#x} not valid for this command", req.flags)));
    }
    if req.kind == CMD_TRIM && n.flags & FLAG_SEND_TRIM == 0 {
        return Err(error(EINVAL, "trim was not offered: this protocol takes no trims"));
    }
    if req.kind == CMD_FLUSH {
        return Ok(());
    }
    if req.length == 0 {
        return Err(error(EINVAL, "a request of length 0"));
    }
    if req.kind == CMD_READ && req.length > MAX_PAYLOAD {
        return Err(error(
            EOVERFLOW,
            format!("a read of {} bytes, over the {MAX_PAYLOAD}-byte maximum", req.length),
        ));
    }
    let end = req.offset.checked_add(req.length as u64);
    if end.is_none_or(|e| e > n.size) {
        // The specification: ENOSPC for a write past the end, EINVAL otherwise.
        let errno = if matches!(req.kind, CMD_WRITE | CMD_WRITE_ZEROES) {
            ENOSPC
        } else {
            EINVAL
        };
        return Err(error(
            errno,
            format!("{} bytes at {} run past the export's {} bytes", req.length, req.offset, n.size),
        ));
    }
    if n.block_sizes && (!req.offset.is_multiple_of(SECTOR as u64) || !req.length.is_multiple_of(SECTOR)) {
        return Err(error(
            EINVAL,
            format!(
                "{} bytes at {}: not aligned to the {SECTOR}-byte minimum block size",
                req.length, req.offset
            ),
        ));
    }
    Ok(())
}

/// Runs a checked request on the export: Ok(Some(data)) for a read.
fn run(shared: &Shared, req: &Request, data: Option<&[u8]>, generation: u64) -> Result<Option<Vec<u8>>, Failure> {
    let fua = req.flags & CMD_FLAG_FUA != 0;
    let mut e = lock(&shared.export);
    if e.generation() != generation {
        return Err(Failure::PowerGone);
    }
    e.before_command()?;
    let (kind, bytes) = match req.kind {
        CMD_READ => ("read", req.length as u64),
        CMD_WRITE => ("write", req.length as u64),
        CMD_FLUSH => ("flush", 0),
        CMD_TRIM => ("trim", req.length as u64),
        _ => ("write_zeroes", req.length as u64),
    };
    let mut out = None;
    let result = match req.kind {
        CMD_READ => {
            let mut buf = vec![0u8; req.length as usize];
            let r = e.read(req.offset, &mut buf);
            out = Some(buf);
            r
        }
        CMD_WRITE => e.write(req.offset, data, req.length as u64, fua),
        CMD_FLUSH => e.flush(),
        CMD_TRIM => e.trim(req.offset, req.length as u64, fua),
        _ => e.write(req.offset, None, req.length as u64, fua),
    };
    match result {
        Ok(ns) => {
            e.stats.command(kind, bytes, Ok(ns));
            Ok(out)
        }
        Err(f) => {
            e.stats.command(kind, bytes, Err(()));
            if let Failure::Error(err) = &f {
                e.stats
                    .log(format!("{kind} of {} bytes at {}: {}", req.length, req.offset, err.message));
            }
            Err(f)
        }
    }
}

fn ok_reply(req: &Request, n: &Negotiated, data: Option<Vec<u8>>) -> Vec<u8> {
    match (data, n.structured) {
        (Some(d), true) => {
            let mut m = structured_header(REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, req.handle, 8 + d.len() as u32).to_vec();
            m.extend_from_slice(&req.offset.to_be_bytes());
            m.extend_from_slice(&d);
            m
        }
        (Some(d), false) => {
            let mut m = simple_reply(0, req.handle).to_vec();
            m.extend_from_slice(&d);
            m
        }
        (None, _) => simple_reply(0, req.handle).to_vec(),
    }
}

fn error_reply(req: &Request, n: &Negotiated, e: &CommandError) -> Vec<u8> {
    if n.structured {
        let p = error_payload(e.errno, &e.message);
        let mut m = structured_header(REPLY_FLAG_DONE, REPLY_TYPE_ERROR, req.handle, p.len() as u32).to_vec();
        m.extend_from_slice(&p);
        m
    } else {
        simple_reply(e.errno, req.handle).to_vec()
    }
}
