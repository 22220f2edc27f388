//! The device interface's operations, as values: the one vocabulary the
//! workloads generate, the crash harness and the concurrent host execute,
//! the trace formats write and read, the recorder writes, and the probes
//! attribute crash points to.
//!
//! An [`Op`] is one call; its [`OpKind`] is what it does without its
//! operands. Most calls name at most one page, and some a transaction; a
//! few extension calls take one more operand, an [`OpArg`]: the target page
//! of the `Remap` calls, a dynamic page's place in its chain, an swrite's
//! acknowledgement. Every kind is a trace word ([`OpKind::ALL`]), so a
//! trace carries every call a host can make.
//!
//! A static transaction (`StaticTx::swrite`) names every page in one call:
//! as values it is its pages, each an [`Op::Stage`] the host holds, then
//! the [`Op::Swrite`] that sends them (the holder of the staged pages, the
//! workload driver, issues it).

use crate::device::{Device, Lpn, Tid};
use crate::error::Result;
use crate::extensions::{Call, DynamicPos, SwriteAck};
use serde::Serialize;

/// What a device call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
    Trim,
    Flush,
    Begin,
    Commit,
    Abort,
    /// A page written naming the page a remap may move it onto (`Remap`).
    WriteRemappable,
    /// A page moved onto another logical page (`Remap`).
    Remap,
    /// A transaction's last page, written end-flagged (`TxEnd`).
    WriteEnd,
    /// A static transaction's page, held by the host until its swrite
    /// (`StaticTx`; no device call).
    Stage,
    /// A static transaction's pages, sent in one call (`StaticTx`).
    Swrite,
    /// A read after every static transaction issued before it (`StaticTx`).
    Sread,
    /// A dynamic transaction's page (`DynamicTx`).
    Dwrite,
    /// The open dynamic transaction's abort (`DynamicTx`).
    Dabort,
}

impl OpKind {
    /// Every kind, the base calls first: the words traces carry.
    pub const ALL: [OpKind; 15] = [
        OpKind::Read,
        OpKind::Write,
        OpKind::Trim,
        OpKind::Flush,
        OpKind::Begin,
        OpKind::Commit,
        OpKind::Abort,
        OpKind::WriteRemappable,
        OpKind::Remap,
        OpKind::WriteEnd,
        OpKind::Stage,
        OpKind::Swrite,
        OpKind::Sread,
        OpKind::Dwrite,
        OpKind::Dabort,
    ];

    /// The word traces and reports use.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Trim => "trim",
            OpKind::Flush => "flush",
            OpKind::Begin => "begin",
            OpKind::Commit => "commit",
            OpKind::Abort => "abort",
            OpKind::WriteRemappable => "write-remappable",
            OpKind::Remap => "remap",
            OpKind::WriteEnd => "write-end",
            OpKind::Stage => "stage",
            OpKind::Swrite => "swrite",
            OpKind::Sread => "sread",
            OpKind::Dwrite => "dwrite",
            OpKind::Dabort => "dabort",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Does the call name a page?
    pub fn has_page(self) -> bool {
        matches!(
            self,
            OpKind::Read
                | OpKind::Write
                | OpKind::Trim
                | OpKind::WriteRemappable
                | OpKind::Remap
                | OpKind::WriteEnd
                | OpKind::Stage
                | OpKind::Sread
                | OpKind::Dwrite
        )
    }

    /// The operand it takes beside its transaction and page, if any.
    pub fn arg(self) -> Option<ArgKind> {
        match self {
            OpKind::WriteRemappable | OpKind::Remap => Some(ArgKind::Page),
            OpKind::Dwrite => Some(ArgKind::Pos),
            OpKind::Swrite => Some(ArgKind::Ack),
            _ => None,
        }
    }

    /// May it open its transaction? A `begin`; a static transaction's first
    /// staged page and a dynamic one's first page open theirs.
    pub fn opens_tx(self) -> bool {
        matches!(self, OpKind::Begin | OpKind::Stage | OpKind::Dwrite)
    }

    /// Does a call of this kind with operand `arg` end its transaction, and
    /// commit it (true) or abort it (false)? A `commit`, an `swrite`, a
    /// REAR `dwrite` commit; an `abort`, a `dabort` abort.
    pub fn ends_tx(self, arg: Option<OpArg>) -> Option<bool> {
        match (self, arg) {
            (OpKind::Commit | OpKind::Swrite, _) | (OpKind::Dwrite, Some(OpArg::Pos(DynamicPos::Rear))) => Some(true),
            (OpKind::Abort | OpKind::Dabort, _) => Some(false),
            _ => None,
        }
    }

    /// Does a call name exactly one page (no range of them in a trace)? The
    /// calls whose operand goes with their page, and a transaction's end.
    pub fn one_page(self) -> bool {
        matches!(self, OpKind::WriteRemappable | OpKind::Remap | OpKind::WriteEnd | OpKind::Dwrite)
    }

    /// Must it name a transaction?
    pub fn needs_tid(self) -> bool {
        matches!(
            self,
            OpKind::Begin
                | OpKind::Commit
                | OpKind::Abort
                | OpKind::WriteEnd
                | OpKind::Stage
                | OpKind::Swrite
                | OpKind::Dwrite
                | OpKind::Dabort
        )
    }

    /// May it name a transaction (a read or write inside one)?
    pub fn takes_tid(self) -> bool {
        self.needs_tid() || matches!(self, OpKind::Read | OpKind::Write)
    }
}

/// What an [`OpArg`] of a kind is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A logical page: the remap calls' target.
    Page,
    /// A dynamic transaction's page's place: `head`, `body`, `rear`.
    Pos,
    /// An swrite's acknowledgement: `s-swrite` (all pages), `a-swrite` (record).
    Ack,
}

/// A call's operand beside its transaction and page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpArg {
    Page(Lpn),
    Pos(DynamicPos),
    Ack(SwriteAck),
}

/// As its trace word.
impl Serialize for OpArg {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.word())
    }
}

impl OpArg {
    /// Its word in a trace.
    pub fn word(self) -> String {
        match self {
            OpArg::Page(l) => l.to_string(),
            OpArg::Pos(DynamicPos::Head) => "head".into(),
            OpArg::Pos(DynamicPos::Body) => "body".into(),
            OpArg::Pos(DynamicPos::Rear) => "rear".into(),
            OpArg::Ack(SwriteAck::AllPages) => "s-swrite".into(),
            OpArg::Ack(SwriteAck::Record) => "a-swrite".into(),
        }
    }

    /// The operand of kind `kind` written `s`; None if `s` is not one.
    pub fn parse(kind: ArgKind, s: &str) -> Option<OpArg> {
        Some(match (kind, s) {
            (ArgKind::Page, _) => OpArg::Page(s.parse().ok()?),
            (ArgKind::Pos, "head") => OpArg::Pos(DynamicPos::Head),
            (ArgKind::Pos, "body") => OpArg::Pos(DynamicPos::Body),
            (ArgKind::Pos, "rear") => OpArg::Pos(DynamicPos::Rear),
            (ArgKind::Ack, "s-swrite") => OpArg::Ack(SwriteAck::AllPages),
            (ArgKind::Ack, "a-swrite") => OpArg::Ack(SwriteAck::Record),
            _ => return None,
        })
    }

    /// The words an operand of `kind` may be, as an error lists them.
    pub fn expected(kind: ArgKind) -> &'static str {
        match kind {
            ArgKind::Page => "a logical page number",
            ArgKind::Pos => "head, body or rear",
            ArgKind::Ack => "s-swrite or a-swrite",
        }
    }
}

/// One device call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Write(Lpn),
    Read(Lpn),
    Trim(Lpn),
    Flush,
    Begin(Tid),
    TxWrite(Tid, Lpn),
    TxRead(Tid, Lpn),
    Commit(Tid),
    Abort(Tid),
    /// `Remap::write_remappable(lpn, data, target)`.
    WriteRemappable(Lpn, Lpn),
    /// `Remap::remap(from, to)`.
    Remap(Lpn, Lpn),
    /// `TxEnd::write_end(tid, lpn, data)`: the transaction's last page.
    WriteEnd(Tid, Lpn),
    /// A page of static transaction `tid`, held by the host until the
    /// transaction's [`Op::Swrite`]: no device call.
    Stage(Tid, Lpn),
    /// `StaticTx::swrite(tid, pages, ack)`, the pages those staged for `tid`.
    Swrite(Tid, SwriteAck),
    /// `StaticTx::sread(lpn, buf)`.
    Sread(Lpn),
    /// `DynamicTx::dwrite(lpn, data, pos)`. The call names no transaction
    /// (one dynamic transaction is open at a time): `tid` is the host's
    /// name for it, as the reference model tracks it.
    Dwrite(Tid, Lpn, DynamicPos),
    /// `DynamicTx::dabort()`, the open dynamic transaction's (the host's `tid`).
    Dabort(Tid),
}

impl Op {
    /// The call of `kind`, in transaction `tid` if it names one, on `lpn`
    /// if its kind names a page; None where the transaction does not fit
    /// the kind (a `begin` without one, a `trim` or `flush` with one) and
    /// for the kinds that take an operand ([`Op::with_arg`]).
    pub fn new(kind: OpKind, tid: Option<Tid>, lpn: Lpn) -> Option<Op> {
        Op::with_arg(kind, tid, lpn, None)
    }

    /// [`Op::new`] with the operand the kind takes ([`OpKind::arg`]); None
    /// where it is missing, of another kind, or given to a kind without one.
    pub fn with_arg(kind: OpKind, tid: Option<Tid>, lpn: Lpn, arg: Option<OpArg>) -> Option<Op> {
        Some(match (kind, tid, arg) {
            (OpKind::WriteRemappable, None, Some(OpArg::Page(t))) => Op::WriteRemappable(lpn, t),
            (OpKind::Remap, None, Some(OpArg::Page(t))) => Op::Remap(lpn, t),
            (OpKind::WriteEnd, Some(t), None) => Op::WriteEnd(t, lpn),
            (OpKind::Stage, Some(t), None) => Op::Stage(t, lpn),
            (OpKind::Swrite, Some(t), Some(OpArg::Ack(a))) => Op::Swrite(t, a),
            (OpKind::Sread, None, None) => Op::Sread(lpn),
            (OpKind::Dwrite, Some(t), Some(OpArg::Pos(p))) => Op::Dwrite(t, lpn, p),
            (OpKind::Dabort, Some(t), None) => Op::Dabort(t),
            (_, _, Some(_)) => return None,
            (kind, tid, None) => return Op::base(kind, tid, lpn),
        })
    }

    fn base(kind: OpKind, tid: Option<Tid>, lpn: Lpn) -> Option<Op> {
        Some(match (kind, tid) {
            (OpKind::Read, None) => Op::Read(lpn),
            (OpKind::Read, Some(t)) => Op::TxRead(t, lpn),
            (OpKind::Write, None) => Op::Write(lpn),
            (OpKind::Write, Some(t)) => Op::TxWrite(t, lpn),
            (OpKind::Trim, None) => Op::Trim(lpn),
            (OpKind::Flush, None) => Op::Flush,
            (OpKind::Begin, Some(t)) => Op::Begin(t),
            (OpKind::Commit, Some(t)) => Op::Commit(t),
            (OpKind::Abort, Some(t)) => Op::Abort(t),
            _ => return None,
        })
    }

    pub fn kind(self) -> OpKind {
        match self {
            Op::Write(_) | Op::TxWrite(..) => OpKind::Write,
            Op::Read(_) | Op::TxRead(..) => OpKind::Read,
            Op::Trim(_) => OpKind::Trim,
            Op::Flush => OpKind::Flush,
            Op::Begin(_) => OpKind::Begin,
            Op::Commit(_) => OpKind::Commit,
            Op::Abort(_) => OpKind::Abort,
            Op::WriteRemappable(..) => OpKind::WriteRemappable,
            Op::Remap(..) => OpKind::Remap,
            Op::WriteEnd(..) => OpKind::WriteEnd,
            Op::Stage(..) => OpKind::Stage,
            Op::Swrite(..) => OpKind::Swrite,
            Op::Sread(_) => OpKind::Sread,
            Op::Dwrite(..) => OpKind::Dwrite,
            Op::Dabort(_) => OpKind::Dabort,
        }
    }

    /// The transaction it names, if any.
    pub fn tid(self) -> Option<Tid> {
        match self {
            Op::Begin(t)
            | Op::TxWrite(t, _)
            | Op::TxRead(t, _)
            | Op::Commit(t)
            | Op::Abort(t)
            | Op::WriteEnd(t, _)
            | Op::Stage(t, _)
            | Op::Swrite(t, _)
            | Op::Dwrite(t, ..)
            | Op::Dabort(t) => Some(t),
            Op::Write(_) | Op::Read(_) | Op::Trim(_) | Op::Flush | Op::WriteRemappable(..) | Op::Remap(..) | Op::Sread(_) => None,
        }
    }

    /// The transaction it ends, and whether it commits it ([`OpKind::ends_tx`]).
    pub fn ends_tx(self) -> Option<(Tid, bool)> {
        let commits = self.kind().ends_tx(self.arg())?;
        Some((self.tid()?, commits))
    }

    /// Its operand beside its transaction and page, if its kind takes one.
    pub fn arg(self) -> Option<OpArg> {
        match self {
            Op::WriteRemappable(_, t) | Op::Remap(_, t) => Some(OpArg::Page(t)),
            Op::Dwrite(_, _, p) => Some(OpArg::Pos(p)),
            Op::Swrite(_, a) => Some(OpArg::Ack(a)),
            _ => None,
        }
    }

    /// The page it names, if any (the remap calls': the page written or moved).
    pub fn lpn(self) -> Option<Lpn> {
        match self {
            Op::Write(l) | Op::Read(l) | Op::Trim(l) | Op::TxWrite(_, l) | Op::TxRead(_, l) | Op::WriteEnd(_, l) => Some(l),
            Op::WriteRemappable(l, _) | Op::Remap(l, _) => Some(l),
            Op::Stage(_, l) | Op::Sread(l) | Op::Dwrite(_, l, _) => Some(l),
            Op::Flush | Op::Begin(_) | Op::Commit(_) | Op::Abort(_) | Op::Swrite(..) | Op::Dabort(_) => None,
        }
    }

    /// Issues the call on `dev`: `buf` is the page's data for a write and
    /// where a read's lands. Returns the call's latency on the device clock.
    /// A staged page issues nothing; a swrite, whose pages the host holds,
    /// is refused here ([`Op::issue_swrite`] sends it).
    pub fn issue<D: Device + ?Sized>(self, dev: &mut D, buf: &mut [u8]) -> Result<u64> {
        match self {
            Op::Write(l) => dev.write(l, buf),
            Op::Read(l) => dev.read(l, buf),
            Op::Trim(l) => dev.trim(l),
            Op::Flush => dev.flush(),
            Op::Begin(t) => dev.begin(t),
            Op::TxWrite(t, l) => dev.write_tx(t, l, buf),
            Op::TxRead(t, l) => dev.read_tx(t, l, buf),
            Op::Commit(t) => dev.commit(t),
            Op::Abort(t) => dev.abort(t),
            Op::WriteRemappable(lpn, target) => dev.call(Call::WriteRemappable { lpn, data: buf, target }),
            Op::Remap(from, to) => dev.call(Call::Remap { from, to }),
            Op::WriteEnd(tid, lpn) => dev.call(Call::WriteEnd { tid, lpn, data: buf }),
            Op::Stage(..) => Ok(0),
            Op::Swrite(tid, _) => Err(crate::DeviceError::CallOrder(format!(
                "the swrite of transaction {tid} is sent with its staged pages (Op::issue_swrite)"
            ))),
            Op::Sread(lpn) => dev.call(Call::Sread { lpn, buf }),
            Op::Dwrite(_, lpn, pos) => dev.call(Call::Dwrite { lpn, data: buf, pos }),
            Op::Dabort(_) => dev.call(Call::Dabort),
        }
    }

    /// Issues [`Op::Swrite`] with the pages the host staged for it.
    pub fn issue_swrite<D: Device + ?Sized>(self, dev: &mut D, pages: &[(Lpn, &[u8])]) -> Result<u64> {
        let Op::Swrite(tid, ack) = self else {
            return Err(crate::DeviceError::CallOrder(format!("{self:?} is not an swrite")));
        };
        dev.call(Call::Swrite { tid, pages, ack })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every call, rebuilt from its kind, transaction, page and operand,
    /// is itself; its kind's word names it and says what it takes.
    #[test]
    fn every_op_round_trips_through_its_kind_tid_page_and_arg() {
        let ops = [
            Op::Write(3),
            Op::Read(4),
            Op::Trim(5),
            Op::Flush,
            Op::Begin(7),
            Op::TxWrite(7, 8),
            Op::TxRead(7, 9),
            Op::Commit(7),
            Op::Abort(7),
            Op::WriteRemappable(3, 4),
            Op::Remap(3, 4),
            Op::WriteEnd(7, 3),
            Op::Stage(7, 3),
            Op::Swrite(7, SwriteAck::Record),
            Op::Swrite(7, SwriteAck::AllPages),
            Op::Sread(3),
            Op::Dwrite(8, 3, DynamicPos::Head),
            Op::Dwrite(8, 3, DynamicPos::Rear),
            Op::Dabort(8),
        ];
        for op in ops {
            let kind = op.kind();
            assert_eq!(Op::with_arg(kind, op.tid(), op.lpn().unwrap_or(0), op.arg()), Some(op));
            assert_eq!(kind.has_page(), op.lpn().is_some(), "{op:?}");
            assert_eq!(kind.arg().is_some(), op.arg().is_some(), "{op:?}");
            assert!(!kind.needs_tid() || op.tid().is_some(), "{op:?}");
            assert!(op.tid().is_none() || kind.takes_tid(), "{op:?}");
            assert_eq!(OpKind::parse(kind.name()), Some(kind));
            if let (Some(a), Some(k)) = (op.arg(), kind.arg()) {
                assert_eq!(OpArg::parse(k, &a.word()), Some(a));
            }
        }
        let kinds: std::collections::BTreeSet<OpKind> = ops.iter().map(|o| o.kind()).collect();
        assert_eq!(kinds.len(), OpKind::ALL.len(), "every kind is tried");
        assert_eq!(Op::new(OpKind::Begin, None, 0), None);
        assert_eq!(Op::new(OpKind::Trim, Some(1), 0), None);
        assert_eq!(Op::new(OpKind::Remap, None, 0), None, "no target");
        assert_eq!(
            Op::with_arg(OpKind::Write, None, 0, Some(OpArg::Page(1))),
            None,
            "an operand a write does not take"
        );
        assert_eq!(OpArg::parse(ArgKind::Pos, "tail"), None);
    }
}
