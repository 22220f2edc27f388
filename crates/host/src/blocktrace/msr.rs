//! MSR Cambridge traces (SNIA IOTTA), CSV with seven columns:
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166372003061629,web,1,Read,5468160,4096,7163
//! ```
//!
//! - `Timestamp`: Windows filetime, 100 ns ticks since 1601. Arrival times are
//!   made relative to the first request (its arrival is 0) and converted to ns.
//! - `Hostname`: kept out of the request (a file is one host's volume);
//!   must not be empty.
//! - `DiskNumber`: the request's device.
//! - `Type`: `Read` or `Write` (ASCII case ignored).
//! - `Offset`, `Size`: bytes.
//! - `ResponseTime`: 100 ns ticks, as measured on the traced system: checked
//!   to be an integer, then ignored (the replay measures its own).
//!
//! The published files have no header; a header line (first field
//! `Timestamp`) is accepted as the first non-blank line and skipped. Blank
//! lines are skipped. Timestamps must not go back (a line error), a request of
//! zero bytes is skipped and counted.

use super::fields::{parse_u32, parse_u64};
use super::reader::{Clock, LineOutput, Parsed};
use super::ReqKind;

/// Nanoseconds in a Windows filetime tick.
pub const FILETIME_TICK_NS: u64 = 100;

pub(crate) struct Parser {
    clock: Clock,
    /// A non-blank line was seen (a header is accepted only before).
    started: bool,
}

impl Parser {
    pub(crate) fn new() -> Self {
        Self {
            clock: Clock::new(true, FILETIME_TICK_NS, "ticks"),
            started: false,
        }
    }

    pub(crate) fn parse_line(&mut self, line: u64, text: &str, out: &mut LineOutput<'_>) -> Result<Parsed, String> {
        if text.trim().is_empty() {
            return Ok(Parsed::Skipped);
        }
        let first = !self.started;
        self.started = true;
        let mut fields = [""; 7];
        let mut count = 0usize;
        for field in text.split(',') {
            if count < fields.len() {
                fields[count] = field.trim();
            }
            count += 1;
        }
        if first && fields[0].eq_ignore_ascii_case("Timestamp") {
            return Ok(Parsed::Skipped);
        }
        if count != fields.len() {
            return Err(format!(
                "expected 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found {count}"
            ));
        }
        let [timestamp, hostname, disk, kind, offset, size, response] = fields;
        let ticks = parse_u64(timestamp, "Timestamp")?;
        if hostname.is_empty() {
            return Err("Hostname is empty".to_string());
        }
        let device = parse_u32(disk, "DiskNumber")?;
        let kind = if kind.eq_ignore_ascii_case("Read") {
            ReqKind::Read
        } else if kind.eq_ignore_ascii_case("Write") {
            ReqKind::Write
        } else {
            return Err(format!("Type `{kind}` is neither Read nor Write"));
        };
        let offset_bytes = parse_u64(offset, "Offset")?;
        let len_bytes = parse_u64(size, "Size")?;
        parse_u64(response, "ResponseTime")?;
        self.clock.push_request(out, ticks, line, device, kind, offset_bytes, len_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read_requests, BlockRequest, ReqKind, TraceError, TraceFormat};

    fn parse(text: &str) -> Vec<Result<BlockRequest, TraceError>> {
        read_requests(TraceFormat::Msr, text.as_bytes()).collect()
    }

    #[test]
    fn rows_relative_to_the_first() {
        let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                    128166372003061629,web,1,Read,5468160,4096,7163\r\n\
                    128166372003061630,web,1,write,512,1024,1\n\
                    128166372013061629,web,0,Write,0,65536,1\n";
        let base = 128_166_372_003_061_629u64;
        assert_eq!(
            parse(text),
            vec![
                Ok(BlockRequest {
                    arrival_ns: 0,
                    device: 1,
                    kind: ReqKind::Read,
                    offset_bytes: 5_468_160,
                    len_bytes: 4096
                }),
                Ok(BlockRequest {
                    arrival_ns: 100,
                    device: 1,
                    kind: ReqKind::Write,
                    offset_bytes: 512,
                    len_bytes: 1024
                }),
                Ok(BlockRequest {
                    arrival_ns: (128_166_372_013_061_629 - base) * 100,
                    device: 0,
                    kind: ReqKind::Write,
                    offset_bytes: 0,
                    len_bytes: 65536
                }),
            ]
        );
    }

    #[test]
    fn errors_name_their_line() {
        let text = "10,h,0,Read,0,512,1\n\
                    11,h,0,Read,0,512\n\
                    12,h,0,Trim,0,512,1\n\
                    13,,0,Read,0,512,1\n\
                    9,h,0,Read,0,512,1\n\
                    Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                    14,h,0,Read,18446744073709551615,1,1\n\
                    15,h,0,Read,0,512,x\n";
        let e: Vec<TraceError> = parse(text).into_iter().filter_map(Result::err).collect();
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7, 8]);
        assert!(e[0].message.contains("expected 7 comma-separated fields"), "{}", e[0]);
        assert!(e[0].message.ends_with("found 6"), "{}", e[0]);
        assert_eq!(e[1].message, "Type `Trim` is neither Read nor Write");
        assert_eq!(e[2].message, "Hostname is empty");
        assert!(
            e[3].message.contains("earlier than the previous request's 10 ticks (line 1)"),
            "{}",
            e[3]
        );
        assert!(
            e[4].message.contains("Timestamp `Timestamp`"),
            "a header only as the first line: {}",
            e[4]
        );
        assert!(e[5].message.contains("ends past 2^64"), "{}", e[5]);
        assert!(e[6].message.contains("ResponseTime `x`"), "{}", e[6]);
    }

    #[test]
    fn zero_size_is_skipped() {
        let mut r = read_requests(TraceFormat::Msr, "5,h,0,Write,0,0,1\n6,h,0,Write,0,512,1\n".as_bytes());
        let got: Vec<_> = r.by_ref().collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().arrival_ns, 0, "the first request kept is the origin");
        assert_eq!(r.stats().zero_length_skipped, 1);
    }
}
