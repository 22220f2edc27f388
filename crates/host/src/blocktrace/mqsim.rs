//! MQSim's and DiskSim's ASCII traces: one request a line, five fields
//! separated by white space:
//!
//! ```text
//! arrival_time device start_sector size_in_sectors type
//! ```
//!
//! Both count addresses and sizes in 512-byte sectors. They differ in the
//! time unit and in the last field, and the [`Dialect`] says which:
//!
//! | dialect  | arrival time                  | last field                                        | source checked |
//! |----------|-------------------------------|---------------------------------------------------|----------------|
//! | `mqsim`  | integer ns                    | `0` = write, `1` = read, anything else refused    | MQSim `src/host/ASCII_Trace_Definition.h`: `ASCIITraceWriteCode "0"`, `ASCIITraceReadCode "1"`; `IO_Flow_Trace_Based.cpp` compares the string with `"0"` |
//! | `disksim`| decimal ms (`%lf`), exact to the ns | flags in hex (`%x`): bit 0 set = read (`READ 0x1`), clear = write (`WRITE 0x0`); other bits (sync/async…) ignored | DiskSim `disksim_iotrace.c` `iotrace_ascii_get_ioreq_event` (`"%lf %d %d %d %x"`), `disksim_global.h` |
//!
//! Where we are stricter than MQSim, on purpose: MQSim reads any type other
//! than `"0"` as a read (we refuse it, since `2` or `W` means the trace is not
//! what the user thinks), and stops silently at the first line that does not
//! have 5 fields (we give that line's error). MQSim parses sectors with
//! `strtoull(…, 0)`, so `0x…` is hex there and a leading `0` octal; we take
//! decimal only, which is what traces contain. MQSim's `Time_Unit` setting can
//! declare ps or µs times; this reader takes ns, MQSim's default.
//!
//! Both simulators require arrival times that never go back (MQSim's
//! "expects request arrival times to be monotonically increasing"); a time
//! earlier than the previous request's is a line error. Times are kept as
//! given (not made relative to the first request), as the simulators do.
//! Blank lines are skipped. A request of zero sectors is skipped and counted
//! ([`super::ReadStats::zero_length_skipped`]).

use super::fields::{parse_decimal_ns, parse_hex_u64, parse_u32, parse_u64, sectors_to_bytes};
use super::reader::{Clock, LineOutput, Parsed};
use super::ReqKind;

/// Which simulator's ASCII trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// MQSim: ns, type `0` write / `1` read.
    Mqsim,
    /// DiskSim: ms, hex flags with bit 0 = read.
    Disksim,
}

impl Dialect {
    fn fields_expected(self) -> &'static str {
        match self {
            Dialect::Mqsim => "expected 5 fields (arrival_ns device start_sector size_sectors type)",
            Dialect::Disksim => "expected 5 fields (arrival_ms device start_block size_blocks flags)",
        }
    }
}

pub(crate) struct Parser {
    dialect: Dialect,
    clock: Clock,
}

impl Parser {
    pub(crate) fn new(dialect: Dialect) -> Self {
        // Times are as given (not relative); both are converted to ns on parsing.
        Self {
            dialect,
            clock: Clock::new(false, 1, "ns"),
        }
    }

    pub(crate) fn parse_line(&mut self, line: u64, text: &str, out: &mut LineOutput<'_>) -> Result<Parsed, String> {
        let mut fields = [""; 5];
        let mut count = 0usize;
        for field in text.split_ascii_whitespace() {
            if count < fields.len() {
                fields[count] = field;
            }
            count += 1;
        }
        if count == 0 {
            return Ok(Parsed::Skipped);
        }
        if count != fields.len() {
            return Err(format!("{}, found {count}", self.dialect.fields_expected()));
        }
        let [time, device, start, size, kind] = fields;
        let time_ns = match self.dialect {
            Dialect::Mqsim => parse_u64(time, "arrival time (ns)")?,
            Dialect::Disksim => parse_decimal_ns(time, 6, "arrival time (ms)")?,
        };
        let device = parse_u32(device, "device")?;
        let start = parse_u64(start, "start sector")?;
        let sectors = parse_u64(size, "size (sectors)")?;
        let kind = match self.dialect {
            Dialect::Mqsim => match kind {
                "0" => ReqKind::Write,
                "1" => ReqKind::Read,
                other => return Err(format!("type `{other}` is neither 0 (write) nor 1 (read)")),
            },
            Dialect::Disksim => {
                let flags = parse_hex_u64(kind, "flags")?;
                if flags & 1 == 1 {
                    ReqKind::Read
                } else {
                    ReqKind::Write
                }
            }
        };
        let offset_bytes = sectors_to_bytes(start, "start sector")?;
        let len_bytes = sectors_to_bytes(sectors, "size")?;
        self.clock.push_request(out, time_ns, line, device, kind, offset_bytes, len_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read_requests, BlockRequest, ReqKind, TraceError, TraceFormat};

    fn parse(format: TraceFormat, text: &str) -> Vec<Result<BlockRequest, TraceError>> {
        read_requests(format, text.as_bytes()).collect()
    }

    fn req(arrival_ns: u64, device: u32, kind: ReqKind, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
        BlockRequest {
            arrival_ns,
            device,
            kind,
            offset_bytes,
            len_bytes,
        }
    }

    #[test]
    fn mqsim_lines() {
        let got = parse(
            TraceFormat::Mqsim,
            "938944000 13 93230992 32 0\n939855000 13 213913104 16 1\r\n\n  941044000\t0 8 1 0  \n",
        );
        assert_eq!(
            got,
            vec![
                Ok(req(938_944_000, 13, ReqKind::Write, 93_230_992 * 512, 32 * 512)),
                Ok(req(939_855_000, 13, ReqKind::Read, 213_913_104 * 512, 16 * 512)),
                Ok(req(941_044_000, 0, ReqKind::Write, 8 * 512, 512)),
            ]
        );
    }

    #[test]
    fn mqsim_errors_name_their_line() {
        let text = "0 0 0 8 0\n1 0 0 8\n2 0 0 8 2\n3 0 x 8 0\n4 0 0 8 W\n5 -1 0 8 0\n6 0 0 8 0 9\n";
        let errors: Vec<TraceError> = parse(TraceFormat::Mqsim, text).into_iter().filter_map(Result::err).collect();
        let lines: Vec<u64> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7]);
        assert_eq!(
            errors[0].to_string(),
            "line 2: expected 5 fields (arrival_ns device start_sector size_sectors type), found 4"
        );
        assert_eq!(errors[1].to_string(), "line 3: type `2` is neither 0 (write) nor 1 (read)");
        assert!(errors[2].message.contains("start sector `x`"), "{}", errors[2]);
        assert!(errors[3].message.contains("`W`"), "{}", errors[3]);
        assert!(errors[4].message.contains("device `-1`"), "{}", errors[4]);
        assert!(errors[5].message.contains("found 6"), "{}", errors[5]);
    }

    #[test]
    fn mqsim_time_must_not_go_back() {
        let got = parse(TraceFormat::Mqsim, "100 0 0 8 0\n100 0 8 8 0\n99 0 0 8 1\n101 0 0 8 1\n");
        assert!(got[0].is_ok() && got[1].is_ok() && got[3].is_ok());
        let err = got[2].clone().unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("earlier than the previous request's 100 ns (line 2)"), "{err}");
    }

    #[test]
    fn mqsim_hostile_numbers_are_line_errors() {
        let got = parse(
            TraceFormat::Mqsim,
            "0 0 36028797018963968 8 0\n0 0 36028797018963967 1 0\n0 0 0 99999999999999999999 0\n",
        );
        let e: Vec<TraceError> = got.into_iter().map(Result::unwrap_err).collect();
        assert!(e[0].message.contains("past 2^64 bytes"), "{}", e[0]);
        assert!(e[1].message.contains("ends past 2^64"), "{}", e[1]);
        assert!(e[2].message.contains("does not fit in 64 bits"), "{}", e[2]);
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn zero_sectors_are_skipped_and_counted() {
        let mut reader = read_requests(TraceFormat::Mqsim, "1 0 0 0 0\n2 0 0 8 1\n".as_bytes());
        let got: Vec<_> = reader.by_ref().collect();
        assert_eq!(got, vec![Ok(req(2, 0, ReqKind::Read, 0, 4096))]);
        assert_eq!(reader.stats().zero_length_skipped, 1);
        assert_eq!(reader.stats().requests, 1);
        assert_eq!(reader.stats().lines, 2);
    }

    #[test]
    fn disksim_lines() {
        let text = "0.000000 0 1000 8 1\n1.5 2 2000 16 0\n2.000001 2 0 1 0x81\n3 1 64 8 100\n";
        assert_eq!(
            parse(TraceFormat::Disksim, text),
            vec![
                Ok(req(0, 0, ReqKind::Read, 1000 * 512, 8 * 512)),
                Ok(req(1_500_000, 2, ReqKind::Write, 2000 * 512, 16 * 512)),
                Ok(req(2_000_001, 2, ReqKind::Read, 0, 512)),
                Ok(req(3_000_000, 1, ReqKind::Write, 64 * 512, 8 * 512)),
            ]
        );
    }

    #[test]
    fn disksim_errors() {
        let got = parse(
            TraceFormat::Disksim,
            "1.0 0 0 8 1\n0.5 0 0 8 1\n2.0 0 0 8 z\n-3 0 0 8 1\n2.0 0 0 8\n",
        );
        let e: Vec<TraceError> = got.into_iter().filter_map(Result::err).collect();
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
        assert!(e[0].message.contains("earlier"), "{}", e[0]);
        assert!(e[1].message.contains("flags `z` is not a hexadecimal integer"), "{}", e[1]);
        assert!(e[2].message.contains("negative"), "{}", e[2]);
        assert!(e[3].message.contains("arrival_ms"), "{}", e[3]);
    }
}
