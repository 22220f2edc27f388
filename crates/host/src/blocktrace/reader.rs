//! The streaming reader shared by every format: bounded lines in, requests out.

use std::collections::VecDeque;
use std::io::{BufRead, ErrorKind};

use serde::Serialize;

use super::fields::check_range;
use super::{blkparse, mqsim, msr, BlockRequest, ReqKind, TraceError, TraceFormat};

/// The longest line a trace may have. A longer one is a line error (and is
/// skipped without being held in memory), so a file without newlines cannot
/// make the reader allocate without bound. Real lines are under 200 bytes.
pub const LINE_BYTES_MAX: usize = 64 * 1024;

/// The most requests one line can give (blkparse: a flush, the write, a flush).
pub(crate) const REQUESTS_PER_LINE_MAX: usize = 3;

/// Choices for formats that have them. `Default` is what the module doc describes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Which blkparse events are the requests.
    pub blkparse_events: blkparse::Events,
}

/// Counts of what the reader did with the lines it read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReadStats {
    /// Lines read so far.
    pub lines: u64,
    /// Requests returned.
    pub requests: u64,
    /// Lines that are not requests by the format's rules: blank lines, a CSV
    /// header, blkparse's summary block and its events of other actions.
    pub lines_skipped: u64,
    /// Reads, writes and trims of zero bytes, skipped (the device has nothing to do).
    pub zero_length_skipped: u64,
    /// blkparse events that carry no data and no flush (`N`), skipped.
    pub no_data_skipped: u64,
    /// Lines returned as errors.
    pub errors: u64,
}

/// What a format's parser made of one line.
pub(crate) enum Parsed {
    /// Requests were pushed to the output.
    Requests,
    /// Not a request: counted in [`ReadStats::lines_skipped`].
    Skipped,
    /// A read/write/trim of zero bytes.
    ZeroLength,
    /// A blkparse event with no data and no flush.
    NoData,
}

/// The requests a line gave, at most [`REQUESTS_PER_LINE_MAX`].
pub(crate) struct LineOutput<'a> {
    queue: &'a mut VecDeque<(u64, BlockRequest)>,
    line: u64,
    pushed: usize,
}

impl LineOutput<'_> {
    pub(crate) fn push(&mut self, req: BlockRequest) {
        assert!(
            self.pushed < REQUESTS_PER_LINE_MAX,
            "a line gives at most {REQUESTS_PER_LINE_MAX} requests"
        );
        self.pushed += 1;
        self.queue.push_back((self.line, req));
    }
}

/// Arrival times: the order check every format shares, and the conversion to
/// ns (relative to the first request for formats whose clock is absolute).
pub(crate) struct Clock {
    relative: bool,
    /// Nanoseconds per unit of the format's raw time.
    ns_per_unit: u64,
    unit: &'static str,
    origin: Option<u64>,
    /// The raw time and line of the last request.
    last: Option<(u64, u64)>,
}

impl Clock {
    pub(crate) fn new(relative: bool, ns_per_unit: u64, unit: &'static str) -> Self {
        assert!(ns_per_unit > 0);
        Self {
            relative,
            ns_per_unit,
            unit,
            origin: None,
            last: None,
        }
    }

    /// One read or write of `len_bytes` at `offset_bytes` at raw time `raw`
    /// on `line`: its range checked, skipped if empty, else pushed with its
    /// arrival. What MQSim's, DiskSim's and MSR's one-request lines share.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_request(
        &mut self,
        out: &mut LineOutput<'_>,
        raw: u64,
        line: u64,
        device: u32,
        kind: ReqKind,
        offset_bytes: u64,
        len_bytes: u64,
    ) -> Result<Parsed, String> {
        check_range(offset_bytes, len_bytes)?;
        if len_bytes == 0 {
            return Ok(Parsed::ZeroLength);
        }
        let arrival_ns = self.arrival(raw, line)?;
        out.push(BlockRequest {
            arrival_ns,
            device,
            kind,
            offset_bytes,
            len_bytes,
        });
        Ok(Parsed::Requests)
    }

    /// The arrival (ns) of a request at raw time `raw` on `line`. Times must
    /// not go back (MQSim and DiskSim refuse such traces too); equal is fine.
    /// Nothing is recorded when it fails.
    pub(crate) fn arrival(&mut self, raw: u64, line: u64) -> Result<u64, String> {
        if let Some((last_raw, last_line)) = self.last {
            if raw < last_raw {
                return Err(format!(
                    "arrival time {raw} {unit} is earlier than the previous request's {last_raw} {unit} (line {last_line}): \
                     requests must be in arrival order",
                    unit = self.unit
                ));
            }
        }
        let origin = if self.relative { self.origin.unwrap_or(raw) } else { 0 };
        debug_assert!(raw >= origin, "times never go back, so none is before the first");
        let ns = (raw - origin)
            .checked_mul(self.ns_per_unit)
            .ok_or_else(|| format!("arrival time {raw} {} is past 2^64 ns from the trace's start", self.unit))?;
        self.origin = Some(origin);
        self.last = Some((raw, line));
        Ok(ns)
    }
}

enum Parser {
    Ascii(mqsim::Parser),
    Msr(msr::Parser),
    Blkparse(blkparse::Parser),
}

impl Parser {
    fn parse_line(&mut self, line: u64, text: &str, out: &mut LineOutput<'_>) -> Result<Parsed, String> {
        match self {
            Parser::Ascii(p) => p.parse_line(line, text, out),
            Parser::Msr(p) => p.parse_line(line, text, out),
            Parser::Blkparse(p) => p.parse_line(line, text, out),
        }
    }
}

/// Reads `reader` as a trace of `format` with the default [`ParseOptions`].
///
/// Streaming: one line at a time (at most [`LINE_BYTES_MAX`] bytes of it), so
/// memory stays bounded whatever the trace's size. Each item is a request or
/// the error of one line; the reader goes on after a bad line (the caller
/// decides whether to stop) but ends after an I/O error.
pub fn read_requests<R: BufRead>(format: TraceFormat, reader: R) -> TraceReader<R> {
    read_requests_with(format, reader, ParseOptions::default())
}

/// [`read_requests`] with options.
pub fn read_requests_with<R: BufRead>(format: TraceFormat, reader: R, options: ParseOptions) -> TraceReader<R> {
    let parser = match format {
        TraceFormat::Mqsim => Parser::Ascii(mqsim::Parser::new(mqsim::Dialect::Mqsim)),
        TraceFormat::Disksim => Parser::Ascii(mqsim::Parser::new(mqsim::Dialect::Disksim)),
        TraceFormat::Msr => Parser::Msr(msr::Parser::new()),
        TraceFormat::Blkparse => Parser::Blkparse(blkparse::Parser::new(options.blkparse_events)),
    };
    TraceReader {
        reader,
        parser,
        buf: Vec::new(),
        pending: VecDeque::with_capacity(REQUESTS_PER_LINE_MAX),
        lines_read: 0,
        item_line: 0,
        ended: false,
        stats: ReadStats::default(),
    }
}

/// The requests of a trace, in the trace's order (an [`Iterator`]); see [`read_requests`].
pub struct TraceReader<R> {
    reader: R,
    parser: Parser,
    /// The line being read; never longer than [`LINE_BYTES_MAX`].
    buf: Vec<u8>,
    /// Requests of the last line not yet returned.
    pending: VecDeque<(u64, BlockRequest)>,
    /// Lines read so far (the number of the last line read).
    lines_read: u64,
    /// The line of the last item returned.
    item_line: u64,
    ended: bool,
    stats: ReadStats,
}

impl<R: BufRead> TraceReader<R> {
    /// What the reader has done so far.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// The 1-based line of the last item returned (0 before the first): the
    /// line to name in an error about that request, e.g. from [`super::AddressMap::map`].
    pub fn line(&self) -> u64 {
        self.item_line
    }

    /// Each request with its line number.
    pub fn numbered(self) -> Numbered<R> {
        Numbered { inner: self }
    }

    /// Reads the next line into `buf`, without its `\n` (and `\r`).
    fn read_line(&mut self) -> LineRead {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.lines_read += 1;
                    return LineRead::Io(format!("read error: {e}"));
                }
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (chunk, used, at_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > LINE_BYTES_MAX {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if at_newline {
                break;
            }
        }
        if !any {
            return LineRead::End;
        }
        self.lines_read += 1;
        self.stats.lines += 1;
        if too_long {
            return LineRead::TooLong;
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        LineRead::Line
    }
}

enum LineRead {
    Line,
    End,
    /// Longer than [`LINE_BYTES_MAX`]: consumed, not kept.
    TooLong,
    Io(String),
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<BlockRequest, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((line, req)) = self.pending.pop_front() {
                self.item_line = line;
                self.stats.requests += 1;
                return Some(Ok(req));
            }
            if self.ended {
                return None;
            }
            match self.read_line() {
                LineRead::Line => {}
                LineRead::End => {
                    self.ended = true;
                    return None;
                }
                LineRead::TooLong => return Some(Err(self.error(format!("line is longer than {LINE_BYTES_MAX} bytes")))),
                LineRead::Io(message) => {
                    // Reported at the line being read; nothing after it can be trusted.
                    self.ended = true;
                    return Some(Err(self.error(message)));
                }
            }
            let text = String::from_utf8_lossy(&self.buf);
            let mut out = LineOutput {
                queue: &mut self.pending,
                line: self.lines_read,
                pushed: 0,
            };
            match self.parser.parse_line(self.lines_read, &text, &mut out) {
                Ok(Parsed::Requests) => debug_assert!(!self.pending.is_empty()),
                Ok(Parsed::Skipped) => self.stats.lines_skipped += 1,
                Ok(Parsed::ZeroLength) => self.stats.zero_length_skipped += 1,
                Ok(Parsed::NoData) => self.stats.no_data_skipped += 1,
                Err(message) => {
                    self.pending.clear();
                    return Some(Err(self.error(message)));
                }
            }
        }
    }
}

impl<R> TraceReader<R> {
    fn error(&mut self, message: String) -> TraceError {
        self.stats.errors += 1;
        self.item_line = self.lines_read;
        TraceError {
            line: self.lines_read,
            message,
        }
    }
}

/// A request of a trace with its 1-based line number; see [`TraceReader::numbered`].
pub struct Numbered<R> {
    inner: TraceReader<R>,
}

impl<R: BufRead> Numbered<R> {
    /// What the reader has done so far.
    pub fn stats(&self) -> &ReadStats {
        self.inner.stats()
    }
}

impl<R: BufRead> Iterator for Numbered<R> {
    type Item = Result<(u64, BlockRequest), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next()?;
        Some(item.map(|req| (self.inner.line(), req)))
    }
}
