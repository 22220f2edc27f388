//! FTL invariants, checked against the NAND itself (through the model's
//! inspection interface, which costs no time and counts no operation).

use crate::blocks::BlockState;
use crate::checkpoint::{decode_block_page, decode_map_page, BlockRecord, RecordState, UNMAPPED};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, OobState, PageKind};
use txftl_nand::DataMode;

impl<H: Hooks> Ftl<H> {
    /// Checks that the DRAM state agrees with itself and with the flash:
    /// - the L2P is one-to-one and the mapped-page bits mirror it;
    /// - every mapped page holds an intact data page of that logical page, in a
    ///   block that is open or full;
    /// - valid counts equal the mapped pages of each block;
    /// - the free pool holds exactly the blocks in state Free, none with valid pages;
    /// - prefree and bad blocks hold no valid pages; open blocks have room;
    /// - the FTL's erase count of a block never exceeds the physical one.
    pub fn check_invariants(&self) -> Result<(), String> {
        let geo = &self.geo;
        let mut valid = vec![0u32; geo.block_count() as usize];
        let mut owner = vec![UNMAPPED; geo.page_count() as usize];
        // One OOB buffer for every mapped page (crash sets check after
        // every recovery: an allocation a page was a fifth of their time),
        // and the array's remembered data CRCs (`Nand::inspect_data_crc`).
        let mut oob = vec![0u8; geo.oob_size as usize];
        let full = self.nand.config().data_mode == DataMode::Full;
        for (lpn, ppn) in self.l2p.entries().iter().enumerate() {
            if ppn == UNMAPPED {
                continue;
            }
            if ppn >= geo.page_count() {
                return Err(format!("lpn {lpn} maps to out-of-range page {ppn}"));
            }
            if owner[ppn as usize] != UNMAPPED {
                return Err(format!(
                    "L2P not one-to-one: lpns {} and {lpn} both map to page {ppn}",
                    owner[ppn as usize]
                ));
            }
            owner[ppn as usize] = lpn as u32;
            if !self.mapped.get(ppn) {
                return Err(format!("page {ppn} is not marked mapped but lpn {lpn} maps there"));
            }
            let b = geo.block_of(ppn);
            valid[b as usize] += 1;
            let state = self.blocks.state[b as usize];
            if !matches!(state, BlockState::Open | BlockState::Full) {
                return Err(format!("lpn {lpn} maps into block {b} in state {state:?}"));
            }
            match Oob::decode_stored(self.nand.inspect_oob_ref(ppn, &mut oob), &self.nand, ppn) {
                OobState::Valid(o) if self.holds(&o, lpn as u32) => {
                    // A page ECC cannot read (or a GC copy of one) is reported
                    // lost at every read: mapped, but never handed up as data.
                    let reported_lost = o.lost || self.nand.inspect_unreadable(ppn);
                    if full && !reported_lost && o.data_crc.is_some_and(|crc| crc != self.nand.inspect_data_crc(ppn)) {
                        return Err(format!("lpn {lpn} at page {ppn}: data CRC mismatch (torn page mapped)"));
                    }
                }
                other => return Err(format!("lpn {lpn} at page {ppn}: OOB is {other:?}")),
            }
        }
        if let Some(ppn) = self.mapped.ones().find(|&ppn| owner[ppn as usize] == UNMAPPED) {
            return Err(format!("page {ppn} is marked mapped but no logical page maps there"));
        }
        let mut free = 0;
        for b in 0..geo.block_count() {
            let i = b as usize;
            if valid[i] != self.blocks.valid[i] {
                return Err(format!(
                    "block {b}: valid count {} but {} pages are mapped",
                    self.blocks.valid[i], valid[i]
                ));
            }
            let state = self.blocks.state[i];
            let in_pool = self.blocks.is_in_free_pool(b);
            if (state == BlockState::Free) != in_pool {
                return Err(format!("block {b} in state {state:?} but in free pool: {in_pool}"));
            }
            if matches!(state, BlockState::Free | BlockState::Prefree | BlockState::Bad | BlockState::Meta) && valid[i] != 0 {
                return Err(format!("block {b} in state {state:?} holds {} valid pages", valid[i]));
            }
            if state == BlockState::Free {
                free += 1;
            }
            if state == BlockState::Open && self.blocks.write_ptr[i] >= geo.pages_per_block {
                return Err(format!("open block {b} is full"));
            }
            if state == BlockState::Prefree && !self.blocks.prefree().contains(&b) {
                return Err(format!("block {b} is prefree but not on the prefree list"));
            }
            if self.blocks.erase_count[i] > self.nand.inspect_erase_count(b) {
                return Err(format!(
                    "block {b}: FTL erase count {} exceeds the physical {}",
                    self.blocks.erase_count[i],
                    self.nand.inspect_erase_count(b)
                ));
            }
        }
        self.blocks.index_consistent()?;
        if free != self.blocks.free_count() {
            return Err(format!("free pool count {} but {free} blocks are free", self.blocks.free_count()));
        }
        for slot in self.host_open.iter().chain(self.gc_open.iter()).flatten() {
            if self.blocks.state[*slot as usize] != BlockState::Open {
                return Err(format!("stream block {slot} is not open"));
            }
        }
        self.check_tables()?;
        // Protocols check against plain entries (a copy: checkers only).
        self.hooks.check(&self.l2p.entries().to_vec(), &self.nand)
    }

    /// The persisted tables agree with the flash and with DRAM:
    /// - every table page the next directory names (the current checkpoint's,
    ///   or a newer write-back of a cached table) lies in the checkpoint ring,
    ///   holds an intact `Map` page of that index with the CRC the directory
    ///   records, and the ring knows it holds it; so does every page the
    ///   current checkpoint names (what recovery reads);
    /// - an L2P page not marked dirty holds exactly the DRAM mappings (so no
    ///   change escapes the next checkpoint), block-table pages hold the
    ///   records the FTL believes persisted;
    /// - the W ring stripes ahead of the head hold no page the current or the
    ///   previous checkpoint needs (the next checkpoint can enter them).
    fn check_tables(&self) -> Result<(), String> {
        let tables = &self.tables;
        let layout = tables.layout;
        let mut entries = vec![0u32; layout.entries_per_page as usize];
        let mut records = Vec::new();
        for (t, e) in tables.dir_cur.iter().enumerate() {
            if e.ppn != UNMAPPED && e.ppn != tables.dir_next[t].ppn {
                self.check_table_page_at(t as u32, e.ppn, e.crc)?;
            }
        }
        for (t, e) in tables.dir_next.iter().enumerate() {
            let t = t as u32;
            let is_map = t < layout.map_pages();
            if e.ppn == UNMAPPED {
                if !is_map {
                    return Err(format!("block-table page {t} has no place in the current checkpoint"));
                }
                // (Without L2P persistence no L2P page is ever persisted.)
                if <H::Mapping as Mapping>::PERSISTED && !tables.map_page_dirty(t) && self.l2p.entries().any_mapped(layout.lpns_of(t)) {
                    return Err(format!("L2P page {t} holds mappings but is neither persisted nor dirty"));
                }
                continue;
            }
            if is_map && !<H::Mapping as Mapping>::PERSISTED {
                return Err(format!("L2P page {t} is persisted, but the protocol keeps no mapping table"));
            }
            let data = self.check_table_page_at(t, e.ppn, e.crc)?;
            if is_map {
                let r = layout.lpns_of(t);
                decode_map_page(&data, &mut entries[..r.len()]);
                if !tables.map_page_dirty(t) && !self.l2p.entries().range(r.clone()).eq(entries[..r.len()].iter().copied()) {
                    return Err(format!("L2P page {t} differs from its persisted copy but is not dirty"));
                }
            } else {
                let r = layout.blocks_of(t);
                records.resize(
                    r.len(),
                    BlockRecord {
                        erase_count: 0,
                        write_ptr: 0,
                        state: RecordState::Free,
                    },
                );
                decode_block_page(&data, r.start, &mut records).map_err(|e| format!("block-table page {t}: {e}"))?;
                let persisted = tables.persisted_blocks.as_ref().map(|p| &p[r]);
                if persisted != Some(&records[..]) {
                    return Err(format!("block-table page {t} differs from the records the FTL believes persisted"));
                }
            }
        }
        let n = self.ckpt_area.stripes();
        for d in 1..=(tables.enter_max as usize).min(n - 1) {
            let idx = (self.ckpt_area.head_index + d) % n;
            if self.ckpt_block_pinned(idx) {
                return Err(format!(
                    "checkpoint ring stripe {idx} (blocks {:?}, {d} ahead of the head) holds pages the current or previous checkpoint needs",
                    self.ckpt_area.stripe_blocks(idx)
                ));
            }
        }
        Ok(())
    }

    /// Table page `t` at `ppn`: in the checkpoint ring, known to the ring as
    /// `t`'s, an intact `Map` page of index `t` whose data has CRC `crc`.
    /// Returns the data.
    fn check_table_page_at(&self, t: u32, ppn: txftl_nand::Ppn, crc: u32) -> Result<Vec<u8>, String> {
        let Some((idx, page)) = self.ckpt_area.locate(ppn, self.geo.pages_per_block) else {
            return Err(format!("table page {t} at physical page {ppn} lies outside the checkpoint ring"));
        };
        let held = self.tables.holder[idx * self.tables.stripe_pages as usize + page as usize];
        if held != t {
            return Err(format!(
                "the ring says physical page {ppn} holds table page {held}, the directory {t}"
            ));
        }
        match Oob::decode(&self.nand.inspect_oob(ppn)) {
            OobState::Valid(o) if o.kind == PageKind::Map && o.lpn == t => {}
            other => return Err(format!("table page {t} at physical page {ppn}: OOB is {other:?}")),
        }
        let data = self.nand.inspect_data(ppn);
        if crc32fast::hash(&data) != crc {
            return Err(format!("table page {t} at physical page {ppn}: CRC differs from the directory's"));
        }
        Ok(data)
    }
}
