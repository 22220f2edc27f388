//! Flag programs: clearing bits of a data page's flag bytes (the OOB record's
//! bytes 56..60, outside its CRC: `oob.rs`) with an SLC partial program, on
//! the device clock. A protocol commits or moves a commit flag this way
//! without writing a page (Flag Commit).
//!
//! The NAND allows NOP programs of a page between erases, the first being
//! the page's program. The framework counts the ones this mount issued; a
//! page programmed before the mount has an unknown count (a flag program a
//! power cut tore spent one even when it cleared nothing visible), so it is
//! taken as spent. A spent page answers [`FlagProgram::NopSpent`], and the
//! protocol copies the page with its flag instead.

use super::*;
use crate::blocks::BlockState;
use crate::error::{DeviceError, Result};
use crate::oob::{FLAGS_AT, FLAG_BYTES};
use txftl_nand::CellType;

/// A page's program count before this mount: unknown.
pub(crate) const UNKNOWN: u8 = u8::MAX;

/// What a flag program did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagProgram {
    /// The bits are cleared on flash once the die is done, at `done_ns`.
    Done { done_ns: u64 },
    /// Nothing was programmed: the page's partial programs are used up (or
    /// unknown, for a page programmed before this mount).
    NopSpent,
}

/// What [`Ftl::program_flags_or_copy`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagOutcome {
    /// The flag program is done at `done_ns`.
    Programmed { done_ns: u64 },
    /// The page's partial programs were spent: it was copied to `new` with
    /// its flags cleared (the protocol's `GcHooks::flagged_copy_bytes`), the
    /// copy's data across the channel at `done_ns`.
    Copied { new: Ppn, done_ns: u64 },
}

impl FlagOutcome {
    pub fn done_ns(&self) -> u64 {
        match *self {
            FlagOutcome::Programmed { done_ns } | FlagOutcome::Copied { done_ns, .. } => done_ns,
        }
    }
}

/// The per-page counts a geometry needs: none without partial programs.
pub(crate) fn counts_for(geo: &Geometry) -> Vec<u8> {
    if partial_programs(geo) {
        vec![UNKNOWN; geo.page_count() as usize]
    } else {
        Vec::new()
    }
}

/// DRAM the per-page counts take on `geo`, bytes.
pub(crate) fn counts_memory(geo: &Geometry) -> u64 {
    if partial_programs(geo) {
        geo.page_count() as u64
    } else {
        0
    }
}

fn partial_programs(geo: &Geometry) -> bool {
    geo.cell == CellType::Slc && geo.nop > 1
}

impl<H: Hooks> Ftl<H> {
    /// Clears the bits set in `clear` of the flag bytes of data page `ppn`
    /// with one partial program, issued at `at_ns` on the page's die (it
    /// waits for the die like any program; the device clock does not move:
    /// the caller waits for `done_ns` where its protocol needs the flag
    /// durable). Refused (a protocol bug, typed) unless the array allows
    /// partial programs and `ppn` is a programmed page of a block in use
    /// (open, full, or prefree and not yet erased: a prefree block counts
    /// for recovery until the checkpoint that releases it; a block released
    /// or erased is not).
    pub fn program_flags(&mut self, ppn: Ppn, clear: [u8; FLAG_BYTES], at_ns: u64) -> Result<FlagProgram> {
        self.check_alive()?;
        if !partial_programs(&self.geo) {
            return Err(DeviceError::Unsupported {
                protocol: self.hooks.name(),
                what: "flag programs: the array has no partial programs (SLC with NOP above 1)",
            });
        }
        let block = self.geo.block_of(ppn);
        let page = self.geo.page_index_of(ppn);
        let state = self.blocks.state.get(block as usize).copied();
        let in_use = match state {
            Some(BlockState::Open | BlockState::Full) => true,
            Some(BlockState::Prefree) => !self.blocks.clean[block as usize],
            _ => false,
        };
        if !in_use || page >= self.blocks.write_ptr[block as usize] {
            return Err(DeviceError::CallOrder(format!(
                "flag program of physical page {ppn}: its block {block} is not in use ({state:?}) or the page is not programmed"
            )));
        }
        let programs = self.flag_programs[ppn as usize];
        if programs == UNKNOWN || programs >= self.geo.nop {
            self.counters.flag_nop_spent += 1;
            return Ok(FlagProgram::NopSpent);
        }
        // The mask in the FTL's scratch spare (no allocation on a commit's path).
        self.oob_buf.fill(0);
        self.oob_buf[FLAGS_AT..FLAGS_AT + FLAG_BYTES].copy_from_slice(&clear);
        let t = match self.nand.partial_program_clear(ppn, at_ns, &self.oob_buf) {
            Ok(t) => t,
            Err(e) => return Err(self.fail(e)),
        };
        self.flag_programs[ppn as usize] = programs + 1;
        self.hooks.on_flags_cleared(ppn, clear);
        debug_assert!(self.flag_programs[ppn as usize] <= self.geo.nop, "page {ppn} past NOP");
        Ok(FlagProgram::Done { done_ns: t.done_ns })
    }

    /// [`Ftl::program_flags`], or, where the page's partial programs are
    /// spent, a copy of the page to the GC stream carrying the flags (its
    /// bytes from `GcHooks::flagged_copy_bytes`; a mapped page's mapping
    /// moves to the copy, and the protocol hears of it by
    /// `GcHooks::on_relocate`, as of any GC copy).
    pub fn program_flags_or_copy(&mut self, ppn: Ppn, clear: [u8; FLAG_BYTES], at_ns: u64) -> Result<FlagOutcome> {
        if let FlagProgram::Done { done_ns } = self.program_flags(ppn, clear, at_ns)? {
            return Ok(FlagOutcome::Programmed { done_ns });
        }
        let (new, done_ns) = self.copy_flagged(ppn, clear, at_ns)?;
        Ok(FlagOutcome::Copied { new, done_ns })
    }

    /// A data page was just programmed: its count restarts at 1.
    pub(crate) fn note_programmed(&mut self, ppn: Ppn) {
        if let Some(c) = self.flag_programs.get_mut(ppn as usize) {
            *c = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::oob::{Oob, OobState};
    use crate::test_hooks::Bare;
    use txftl_nand::{DataMode, Nand, ViolationPolicy};

    fn slc(nop: u8) -> Ftl<Bare> {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.cell = CellType::Slc;
        p.geometry.nop = nop;
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        Ftl::format(nand, FtlConfig::default(), Bare).unwrap()
    }

    fn flags_of(f: &Ftl<Bare>, ppn: Ppn) -> [u8; FLAG_BYTES] {
        match Oob::decode(&f.nand().inspect_oob(ppn)) {
            OobState::Valid(o) => o.flag_bytes,
            other => panic!("page {ppn}: {other}"),
        }
    }

    /// A flag program clears the bits asked for and no others, keeps the
    /// record valid, takes a partial program's time on the page's die, and
    /// answers "NOP spent" once the page's programs are used up (the array,
    /// which panics past NOP, is never asked).
    #[test]
    fn flag_programs_clear_bits_until_the_nop_is_spent() {
        let mut f = slc(3);
        let page = vec![7u8; f.page_size() as usize];
        f.write(5, &page).unwrap();
        let ppn = f.mapping(5).unwrap();
        assert_eq!(flags_of(&f, ppn), [0xFF; FLAG_BYTES]);
        let t0 = f.now_ns;
        let FlagProgram::Done { done_ns } = f.program_flags(ppn, [0x01, 0, 0, 0x80], t0).unwrap() else {
            panic!("a fresh page has programs left")
        };
        let pp = f.nand().config().timing.partial_program_ns;
        assert!(done_ns >= t0 + pp, "{done_ns} < {t0} + {pp}");
        assert_eq!(flags_of(&f, ppn), [0xFE, 0xFF, 0xFF, 0x7F]);
        // The die is busy until then: a second flag program issued at t0 ends after it.
        let FlagProgram::Done { done_ns: second } = f.program_flags(ppn, [0x02, 0, 0, 0], t0).unwrap() else {
            panic!("NOP 3: one program and two flag programs")
        };
        assert!(second >= done_ns + pp);
        assert_eq!(flags_of(&f, ppn), [0xFC, 0xFF, 0xFF, 0x7F]);
        assert_eq!(f.program_flags(ppn, [0x04, 0, 0, 0], t0).unwrap(), FlagProgram::NopSpent);
        assert_eq!(f.stats().flag_nop_spent, 1);
        assert_eq!(f.nand().stats().partial_programs, 2);
        let mut back = vec![0u8; page.len()];
        f.read(5, &mut back).unwrap();
        assert_eq!(back, page, "the data is untouched");
    }

    /// After a mount a page's count is unknown (a torn flag program may
    /// have spent one unseen): every page programmed before it is spent; a
    /// page programmed since has its programs.
    #[test]
    fn pages_from_before_a_mount_count_as_spent() {
        let mut f = slc(4);
        let page = vec![1u8; f.page_size() as usize];
        f.write(3, &page).unwrap();
        f.flush().unwrap();
        let old = f.mapping(3).unwrap();
        let nand = f.into_nand();
        let mut f = Ftl::mount(nand, FtlConfig::default(), Bare).unwrap();
        let now = f.now_ns;
        assert_eq!(f.program_flags(old, [1, 0, 0, 0], now).unwrap(), FlagProgram::NopSpent);
        f.write(4, &page).unwrap();
        let new = f.mapping(4).unwrap();
        assert!(matches!(f.program_flags(new, [1, 0, 0, 0], now).unwrap(), FlagProgram::Done { .. }));
    }

    /// Misuse is a typed error: a page of a free block, an unprogrammed
    /// page, an array without partial programs.
    #[test]
    fn flag_programs_are_refused_where_they_cannot_be() {
        let mut f = slc(2);
        let page = vec![1u8; f.page_size() as usize];
        f.write(0, &page).unwrap();
        let ppn = f.mapping(0).unwrap();
        let next = ppn + 1; // the open block's next page: not programmed yet
        assert!(matches!(f.program_flags(next, [1, 0, 0, 0], 0), Err(DeviceError::CallOrder(_))));
        let free = (0..f.geo.block_count())
            .find(|&b| f.blocks.state[b as usize] == BlockState::Free)
            .unwrap();
        let free_ppn = f.geo.ppn(free, 0);
        assert!(matches!(f.program_flags(free_ppn, [1, 0, 0, 0], 0), Err(DeviceError::CallOrder(_))));
        let nand = Nand::new(txftl_nand::preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let mut mlc = Ftl::format(nand, FtlConfig::default(), Bare).unwrap();
        mlc.write(0, &page).unwrap();
        let ppn = mlc.mapping(0).unwrap();
        assert!(matches!(
            mlc.program_flags(ppn, [1, 0, 0, 0], 0),
            Err(DeviceError::Unsupported { .. })
        ));
    }
}
