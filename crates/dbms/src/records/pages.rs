//! The contents of the resident DB pages of the record-level engine: each
//! page's records (slot to version: the id of the transaction that wrote
//! it; absent, the load's 0), split by slot over the page's flash pages,
//! with a pageLSN per flash page (the last log record applied to it), and
//! whether it is dirty. The buffer pool decides residency; this holds
//! what a resident page contains.

use crate::error::{DbmsError, Result};
use crate::io::Io;
use crate::wal::format::{self, ImagePart, Lsn};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageState {
    pub parts: Vec<ImagePart>,
    pub dirty: bool,
}

impl PageState {
    /// The page's LSN: the newest record applied to any of its flash pages.
    pub fn lsn(&self) -> Lsn {
        self.parts.iter().map(|p| p.lsn).max().unwrap_or(0)
    }

    pub fn version(&self, slot: u32) -> u32 {
        let n = self.parts.len() as u32;
        self.parts[(slot % n) as usize].records.get(&slot).copied().unwrap_or(0)
    }

    /// Record `slot` now holds `version`, by the log record at `lsn`.
    pub fn set(&mut self, slot: u32, version: u32, lsn: Lsn) {
        let n = self.parts.len() as u32;
        let part = &mut self.parts[(slot % n) as usize];
        assert!(lsn > part.lsn, "log record {lsn} applied after {}", part.lsn);
        part.records.insert(slot, version);
        part.lsn = lsn;
        self.dirty = true;
    }
}

/// Reads DB page `page` (its `per_db` flash pages) at `at_ns`;
/// its contents and the reads' completion. A flash page that holds no
/// image (never written since the load) holds the load's versions.
pub fn read_page(io: &mut Io, at_ns: u64, page: u32, per_db: u32) -> Result<(PageState, u64)> {
    let first_lpn = page * per_db;
    io.with_scratch(|io, buf| {
        let mut done = at_ns;
        let mut parts = Vec::with_capacity(per_db as usize);
        for i in 0..per_db {
            done = done.max(io.read_raw(at_ns, first_lpn + i, buf)?);
            let part = if io.full_data() {
                format::decode_image(buf, page, i as u16).unwrap_or_default()
            } else {
                ImagePart::default()
            };
            parts.push(part);
        }
        Ok((PageState { parts, dirty: false }, done))
    })
}

/// Writes DB page `page` at `at_ns`; the writes' completion. In full-data
/// mode a page whose records outgrow a flash page is refused.
pub fn write_page(io: &mut Io, at_ns: u64, page: u32, state: &PageState) -> Result<u64> {
    let first_lpn = page * state.parts.len() as u32;
    io.with_scratch(|io, buf| {
        let mut done = at_ns;
        for (i, part) in state.parts.iter().enumerate() {
            if io.full_data() && !format::encode_image(buf, page, i as u16, part) {
                return Err(DbmsError::PageImageFull {
                    page,
                    records: part.records.len(),
                    per_flash_page: format::image_capacity(buf.len()),
                });
            }
            done = done.max(io.write_raw(at_ns, first_lpn + i as u32, buf)?);
        }
        Ok(done)
    })
}

/// The resident pages' contents, by DB page.
#[derive(Default)]
pub struct PageTable {
    pub pages: BTreeMap<u32, PageState>,
}

impl PageTable {
    pub fn get(&self, page: u32) -> &PageState {
        self.pages.get(&page).expect("a resident page has contents")
    }

    pub fn get_mut(&mut self, page: u32) -> &mut PageState {
        self.pages.get_mut(&page).expect("a resident page has contents")
    }

    pub fn dirty_pages(&self) -> Vec<u32> {
        self.pages.iter().filter(|(_, s)| s.dirty).map(|(&p, _)| p).collect()
    }
}
