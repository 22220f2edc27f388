//! txftl's transactional block trace: what a host sent to the device
//! interface, one operation a line, as text.
//!
//! ```text
//! # txftl-trace v2
//! # time_ns client tid op lpn pages [arg]
//! 0 0 - write 17 1
//! 1200 1 7 begin - -
//! 1200 1 7 write 40 2
//! 9800 1 7 commit - -
//! 9800 0 - barrier - -
//! 9900 0 8 stage 3 2
//! 9900 0 8 swrite - - a-swrite
//! 9950 0 - remap 60 1 4
//! ```
//!
//! Fields, separated by spaces or tabs:
//! - `time_ns`: submission time on the device clock (simulated ns);
//! - `client`: the host client that sent it (0-based);
//! - `tid`: the transaction (`-` for none); `begin`, `commit`, `abort` and
//!   the extension calls of a transaction need one; a `read` or `write` with
//!   one is transactional (`read_tx`/`write_tx`);
//! - `op`: `read`, `write`, `trim`, `flush`, `begin`, `commit`, `abort`, `barrier`
//!   (every earlier operation completes before a later one starts), and the
//!   extension calls: `write-remappable`, `remap` (SW-WAL), `write-end`
//!   (NoLgn), `stage`, `swrite`, `sread`, `dwrite`, `dabort` (Möbius; a
//!   static transaction is its `stage`d pages, then the `swrite` that sends
//!   them; a dynamic one's `tid` is the host's name for it);
//! - `lpn`, `pages`: the first logical page and the page count (`-` for `flush`,
//!   `begin`, `commit`, `abort`, `swrite`, `dabort`, `barrier`; at least 1
//!   page otherwise, exactly 1 for `write-remappable`, `remap`, `write-end`
//!   and `dwrite`);
//! - `arg`, only for the calls that take one: the target page of
//!   `write-remappable` and `remap`; `head`, `body` or `rear` for `dwrite`;
//!   `s-swrite` or `a-swrite` (returns at every page, or at the record) for
//!   `swrite`.
//!
//! A v1 trace (no extension calls, no `arg`) is a v2 trace. Lines starting
//! with `#` and blank lines are skipped. A bad line is a [`TraceError`] with
//! its line number.

use crate::blocktrace::TraceError;
use serde::Serialize;
use std::io::{self, BufRead, Write};
use txftl_ftl::{OpArg, OpKind};

/// What a trace line does: a device call (the device layer's [`OpKind`]),
/// or a barrier: every earlier operation completes before a later one
/// starts (a host-side ordering, not a device call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase", untagged)]
pub enum TraceKind {
    Op(OpKind),
    #[serde(serialize_with = "barrier_word")]
    Barrier,
}

fn barrier_word<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("barrier")
}

impl TraceKind {
    /// Every kind, in the order traces list them.
    pub fn all() -> impl Iterator<Item = TraceKind> {
        OpKind::ALL.into_iter().map(TraceKind::Op).chain([TraceKind::Barrier])
    }

    pub fn name(self) -> &'static str {
        match self {
            TraceKind::Op(k) => k.name(),
            TraceKind::Barrier => "barrier",
        }
    }

    pub fn parse(s: &str) -> Option<TraceKind> {
        TraceKind::all().find(|k| k.name() == s)
    }

    /// Does the operation name a page range?
    pub fn has_range(self) -> bool {
        matches!(self, TraceKind::Op(k) if k.has_page())
    }

    /// Must it name a transaction?
    pub fn needs_tid(self) -> bool {
        matches!(self, TraceKind::Op(k) if k.needs_tid())
    }

    /// May it name a transaction?
    pub fn takes_tid(self) -> bool {
        matches!(self, TraceKind::Op(k) if k.takes_tid())
    }
}

/// One line of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TraceOp {
    pub time_ns: u64,
    pub client: u32,
    pub tid: Option<u32>,
    pub kind: TraceKind,
    /// First page and count (0 and 0 for operations without a range).
    pub lpn: u32,
    pub pages: u32,
    /// The operand its kind takes beside them ([`OpKind::arg`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arg: Option<OpArg>,
}

impl TraceOp {
    pub fn new(time_ns: u64, client: u32, tid: Option<u32>, kind: TraceKind, lpn: u32, pages: u32) -> TraceOp {
        TraceOp {
            time_ns,
            client,
            tid,
            kind,
            lpn,
            pages,
            arg: None,
        }
    }

    /// With the operand its kind takes.
    pub fn with_arg(self, arg: Option<OpArg>) -> TraceOp {
        TraceOp { arg, ..self }
    }
}

/// A trace being written that can travel with a device (`Send`): what
/// `run --record`, replays and the device recorder write to.
pub type TraceRecord = TraceWriter<Box<dyn Write + Send>>;

pub const HEADER: &str = "# txftl-trace v2\n# time_ns client tid op lpn pages [arg]\n";

/// Writes a trace, line by line.
pub struct TraceWriter<W: Write> {
    out: W,
    pub lines: u64,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W) -> io::Result<TraceWriter<W>> {
        out.write_all(HEADER.as_bytes())?;
        Ok(TraceWriter { out, lines: 0 })
    }

    pub fn op(&mut self, op: &TraceOp) -> io::Result<()> {
        self.lines += 1;
        write!(self.out, "{} {} ", op.time_ns, op.client)?;
        match op.tid {
            Some(t) => write!(self.out, "{t} ")?,
            None => self.out.write_all(b"- ")?,
        }
        self.out.write_all(op.kind.name().as_bytes())?;
        if op.kind.has_range() {
            write!(self.out, " {} {}", op.lpn, op.pages)?;
        } else {
            self.out.write_all(b" - -")?;
        }
        match op.arg {
            Some(a) => writeln!(self.out, " {}", a.word()),
            None => writeln!(self.out),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A field as a number of type `T`: a whole number too large for it is out
/// of range, anything else is not a number.
fn field<T: std::str::FromStr + Bounded>(s: &str, name: &str, line: u64) -> Result<T, TraceError> {
    s.parse().map_err(|_| {
        let message = match s.parse::<u128>() {
            Ok(_) => format!("{name} `{s}` is out of range (at most {})", T::MAX_TEXT),
            Err(_) => format!("{name} `{s}` is not a number"),
        };
        TraceError { line, message }
    })
}

/// The largest value of a field's type, as the error names it.
trait Bounded {
    const MAX_TEXT: &'static str;
}
impl Bounded for u32 {
    const MAX_TEXT: &'static str = "4294967295";
}
impl Bounded for u64 {
    const MAX_TEXT: &'static str = "18446744073709551615";
}

fn optional<T: std::str::FromStr + Bounded>(s: &str, name: &str, line: u64) -> Result<Option<T>, TraceError> {
    if s == "-" {
        Ok(None)
    } else {
        field(s, name, line).map(Some)
    }
}

/// Parses one non-comment line.
pub fn parse_line(text: &str, line: u64) -> Result<TraceOp, TraceError> {
    let f: Vec<&str> = text.split_whitespace().collect();
    if !(6..=7).contains(&f.len()) {
        return Err(TraceError {
            line,
            message: format!("expected 6 or 7 fields (time_ns client tid op lpn pages [arg]), found {}", f.len()),
        });
    }
    let err = |message: String| TraceError { line, message };
    let time_ns: u64 = field(f[0], "time_ns", line)?;
    let client: u32 = field(f[1], "client", line)?;
    let tid: Option<u32> = optional(f[2], "tid", line)?;
    let kind = TraceKind::parse(f[3]).ok_or_else(|| {
        let known: Vec<&str> = TraceKind::all().map(TraceKind::name).collect();
        err(format!("unknown operation `{}` (known: {})", f[3], known.join(", ")))
    })?;
    let arg = parse_arg(kind, f.get(6).copied(), line)?;
    let lpn: Option<u32> = optional(f[4], "lpn", line)?;
    let pages: Option<u32> = optional(f[5], "pages", line)?;
    if kind.needs_tid() && tid.is_none() {
        return Err(err(format!("`{}` needs a transaction id", kind.name())));
    }
    if !kind.takes_tid() && tid.is_some() {
        return Err(err(format!("`{}` takes no transaction id (give `-`)", kind.name())));
    }
    let (lpn, pages) = match (kind.has_range(), lpn, pages) {
        (true, Some(_), Some(p)) if p > 1 && matches!(kind, TraceKind::Op(k) if k.one_page()) => {
            return Err(err(format!("`{}` names one page, not {p}", kind.name())))
        }
        (true, Some(l), Some(p)) if p >= 1 => {
            if l.checked_add(p - 1).is_none() {
                return Err(err(format!("pages {l} + {p} run past the largest page number")));
            }
            (l, p)
        }
        (true, Some(_), Some(_)) => return Err(err("a range needs at least 1 page".into())),
        (true, _, _) => return Err(err(format!("`{}` needs lpn and pages", kind.name()))),
        (false, None, None) => (0, 0),
        (false, _, _) => return Err(err(format!("`{}` takes no lpn or pages (give `- -`)", kind.name()))),
    };
    Ok(TraceOp {
        time_ns,
        client,
        tid,
        kind,
        lpn,
        pages,
        arg,
    })
}

/// The 7th field: the operand of the kinds that take one, else absent.
fn parse_arg(kind: TraceKind, field: Option<&str>, line: u64) -> Result<Option<OpArg>, TraceError> {
    let err = |message: String| TraceError { line, message };
    let takes = match kind {
        TraceKind::Op(k) => k.arg(),
        TraceKind::Barrier => None,
    };
    match (takes, field) {
        (None, None) => Ok(None),
        (None, Some(a)) => Err(err(format!("`{}` takes no 7th field (found `{a}`)", kind.name()))),
        (Some(k), None) => Err(err(format!("`{}` needs a 7th field: {}", kind.name(), OpArg::expected(k)))),
        (Some(k), Some(a)) => OpArg::parse(k, a)
            .map(Some)
            .ok_or_else(|| err(format!("`{}`'s 7th field `{a}` is not {}", kind.name(), OpArg::expected(k)))),
    }
}

/// A trace read into memory: its operations and the line each came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub ops: Vec<TraceOp>,
    pub lines: Vec<u64>,
}

/// Reads a whole trace. An I/O error is reported at the line it happened on.
pub fn read_trace(input: impl BufRead) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    for (i, l) in input.lines().enumerate() {
        let line = i as u64 + 1;
        let l = l.map_err(|e| TraceError {
            line,
            message: format!("cannot read: {e}"),
        })?;
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        trace.ops.push(parse_line(t, line)?);
        trace.lines.push(line);
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_written_reads_back_the_same() {
        let ops = vec![
            TraceOp::new(0, 0, None, TraceKind::Op(OpKind::Write), 17, 1),
            TraceOp::new(10, 1, Some(7), TraceKind::Op(OpKind::Begin), 0, 0),
            TraceOp::new(12, 1, Some(7), TraceKind::Op(OpKind::Write), 40, 2),
            TraceOp::new(13, 1, Some(7), TraceKind::Op(OpKind::Read), 40, 1),
            TraceOp::new(20, 1, Some(7), TraceKind::Op(OpKind::Commit), 0, 0),
            TraceOp::new(20, 0, None, TraceKind::Barrier, 0, 0),
            TraceOp::new(21, 0, None, TraceKind::Op(OpKind::Trim), 3, 4),
            TraceOp::new(22, 2, None, TraceKind::Op(OpKind::Flush), 0, 0),
            TraceOp::new(23, 2, Some(9), TraceKind::Op(OpKind::Begin), 0, 0),
            TraceOp::new(24, 2, Some(9), TraceKind::Op(OpKind::Abort), 0, 0),
            TraceOp::new(25, 0, None, TraceKind::Op(OpKind::WriteRemappable), 60, 1).with_arg(Some(OpArg::Page(4))),
            TraceOp::new(26, 0, None, TraceKind::Op(OpKind::Remap), 60, 1).with_arg(Some(OpArg::Page(4))),
            TraceOp::new(27, 0, Some(10), TraceKind::Op(OpKind::WriteEnd), 5, 1),
            TraceOp::new(28, 0, Some(11), TraceKind::Op(OpKind::Stage), 3, 2),
            TraceOp::new(29, 0, Some(11), TraceKind::Op(OpKind::Swrite), 0, 0)
                .with_arg(Some(OpArg::Ack(txftl_ftl::extensions::SwriteAck::Record))),
            TraceOp::new(30, 0, None, TraceKind::Op(OpKind::Sread), 3, 1),
            TraceOp::new(31, 0, Some(12), TraceKind::Op(OpKind::Dwrite), 8, 1)
                .with_arg(Some(OpArg::Pos(txftl_ftl::extensions::DynamicPos::Head))),
            TraceOp::new(32, 0, Some(12), TraceKind::Op(OpKind::Dabort), 0, 0),
        ];
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        for o in &ops {
            w.op(o).unwrap();
        }
        let bytes = w.finish().unwrap();
        assert_eq!(read_trace(&bytes[..]).unwrap().ops, ops);
    }

    #[test]
    fn bad_lines_name_their_line_and_fault() {
        let cases = [
            ("0 0 - write 1", "expected 6 or 7 fields"),
            ("0 0 - remap 3 1", "`remap` needs a 7th field: a logical page number"),
            ("0 0 - write 3 1 4", "`write` takes no 7th field"),
            ("0 0 5 dwrite 3 1 tail", "`dwrite`'s 7th field `tail` is not head, body or rear"),
            ("0 0 5 dwrite 3 2 head", "`dwrite` names one page, not 2"),
            ("0 0 - swrite - - a-swrite", "`swrite` needs a transaction id"),
            ("x 0 - write 1 1", "time_ns `x` is not a number"),
            (
                "0 0 - write 99999999999 1",
                "lpn `99999999999` is out of range (at most 4294967295)",
            ),
            ("0 0 - write -3 1", "lpn `-3` is not a number"),
            ("0 0 - fly 1 1", "unknown operation `fly`"),
            ("0 0 - begin - -", "`begin` needs a transaction id"),
            ("0 0 3 trim 1 1", "`trim` takes no transaction id"),
            ("0 0 - write - -", "`write` needs lpn and pages"),
            ("0 0 - write 1 0", "at least 1 page"),
            ("0 0 - flush 1 1", "takes no lpn or pages"),
            ("0 0 - write 4294967295 2", "run past"),
        ];
        for (text, want) in cases {
            let input = format!("# header\n\n{text}\n");
            let e = read_trace(input.as_bytes()).unwrap_err();
            assert_eq!(e.line, 3, "{text}: {e}");
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }
}
