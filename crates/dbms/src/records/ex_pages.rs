//! DB pages under Flag Commit's extended manager (sec. 4.2): each flash
//! page of a DB page is written as a version holding its pending records
//! (`RecordTx::write_records`, one entry per transaction with a pending
//! record in it), and read back as the versions a reader needs
//! (`RecordTx::read_versions`) with each entry's status.
//!
//! The image of a version (`wal::format`) lists every record's version,
//! the pending ones with the committed version beneath: the paper keeps
//! only the pending value and restores an aborted record "by reading the
//! current content from the disk" (an older version), which loses a
//! record committed in the buffer and overwritten by a pending update
//! before its page was written, once the log that held it is truncated.
//! So the newest version decides every record: a pending record whose
//! entry reads committed holds its value, an open one its writer's, an
//! aborted or in-doubt one the value beneath. The versions are written
//! self-contained (`RecordTx::write_contained`): a read returns the newest
//! only, and the older ones are garbage at once. The paper's merge reads
//! every version down to one holding each record committed, and keeps
//! those versions live: a device without the records' ids in its spare
//! area (footnote 9's room) could only keep every version down to one
//! whose pending records are all committed, which at 50 clients on TPC-C's
//! hot pages is a long chain (measured: `docs/dbms.md`).
//!
//! Without full data the device keeps no bytes: the image each version
//! would hold is kept beside it ([`Shadow`]), its entries' statuses still
//! come from the device.

use super::pages::PageState;
use crate::error::{DbmsError, Result};
use crate::io::Io;
use crate::wal::format::{self, ImagePart, Pending};
use std::collections::BTreeMap;
use txftl_ftl::{EntryStatus, RecordVersion, Tid};

/// The images of the newest versions, for a device that keeps no data:
/// (DB page, flash page index) to the image as encoded (entry indices).
pub type Shadow = BTreeMap<(u32, u16), ImagePart>;

/// Writes DB page `page` at `at_ns`, each flash page a version with its
/// pending records' transactions; the writes' completion.
pub fn write_page(io: &mut Io, at_ns: u64, page: u32, state: &PageState, mut shadow: Option<&mut Shadow>) -> Result<u64> {
    let first_lpn = page * state.parts.len() as u32;
    io.with_scratch(|io, buf| {
        let mut done = at_ns;
        for (i, part) in state.parts.iter().enumerate() {
            let owners: Vec<Tid> = part.pending_owners();
            if io.full_data() {
                if !format::encode_image(buf, page, i as u16, part) {
                    return Err(DbmsError::PageImageFull {
                        page,
                        records: part.records.len() + part.pending.len(),
                        per_flash_page: format::image_capacity(buf.len()),
                    });
                }
            } else if let Some(s) = shadow.as_deref_mut() {
                s.insert((page, i as u16), as_encoded(part));
            }
            done = done.max(io.write_contained(at_ns, first_lpn + i as u32, buf, &owners)?);
        }
        Ok(done)
    })
}

/// `part` as its image reads back: each pending record's owner its entry index.
fn as_encoded(part: &ImagePart) -> ImagePart {
    let owners = part.pending_owners();
    let mut out = part.clone();
    for p in out.pending.values_mut() {
        p.owner = owners.binary_search(&p.owner).expect("listed") as u32;
    }
    out
}

/// Reads DB page `page` at `at_ns`: each flash page's versions, merged as
/// the module says; the page's contents and the reads' completion.
pub fn read_page(io: &mut Io, at_ns: u64, page: u32, per_db: u32, shadow: Option<&Shadow>) -> Result<(PageState, u64)> {
    let mut versions: Vec<RecordVersion> = Vec::new();
    let mut parts = Vec::with_capacity(per_db as usize);
    let mut done = at_ns;
    for i in 0..per_db {
        done = done.max(io.read_versions(at_ns, page * per_db + i, &mut versions)?);
        let Some(newest) = versions.first() else {
            parts.push(ImagePart::default());
            continue;
        };
        let image = if io.full_data() {
            format::decode_image(&newest.data, page, i as u16)
        } else {
            shadow.and_then(|s| s.get(&(page, i as u16))).cloned()
        };
        parts.push(merge(image.unwrap_or_default(), &newest.entries, page)?);
    }
    Ok((PageState { parts, dirty: false }, done))
}

/// The newest version's image with its entries' statuses applied.
fn merge(mut part: ImagePart, entries: &[EntryStatus], page: u32) -> Result<ImagePart> {
    let pending = std::mem::take(&mut part.pending);
    for (slot, p) in pending {
        let status = entries.get(p.owner as usize).copied().ok_or_else(|| {
            DbmsError::Corrupt(format!(
                "DB page {page}: record {slot} names entry {} of a version with {}",
                p.owner,
                entries.len()
            ))
        })?;
        match status {
            EntryStatus::Committed => {}
            EntryStatus::Open(tid) => {
                part.pending.insert(
                    slot,
                    Pending {
                        owner: tid,
                        under: p.under,
                    },
                );
            }
            EntryStatus::Aborted | EntryStatus::InDoubt(_) => {
                if p.under == 0 {
                    part.records.remove(&slot);
                } else {
                    part.records.insert(slot, p.under);
                }
            }
        }
    }
    Ok(part)
}
