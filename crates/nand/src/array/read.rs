//! Reads and read retries: the data and spare areas copied out, their time
//! on the die and channel, and the ECC decode of the fault model.

use super::{DataMode, FlashOp, Nand};
use crate::bit_errors::{FaultModel, PageKey, SALT_GARBAGE};
use crate::error::NandError;
use crate::geometry::Ppn;
use crate::spare::ReadFields;
use crate::timing::OpTime;

impl Nand {
    /// Reads a page. `data: None` reads the OOB only (a spare-area read: the
    /// channel moves only the OOB bytes). With a fault model, a page with more
    /// bit errors than ECC corrects is [`NandError::Uncorrectable`]: the area
    /// that failed holds corrupted bytes, the other one what the cells hold.
    #[inline]
    pub fn read(&mut self, ppn: Ppn, at_ns: u64, data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<OpTime, NandError> {
        self.read_at_level(ppn, at_ns, 0, data, oob, None, None, None)
    }

    /// A read (retry `level`, 0 for a plain read) of the data and spare
    /// areas that also returns the CRC-32 (IEEE, as `crc32fast` computes it)
    /// of the data it hands up, as a controller's CRC engine computes it on
    /// the way out. A full-data array remembers it per page version
    /// (`page_data.rs`), so a page read again costs no hash: a crash set
    /// reads every page back after every recovery. Same operation, time,
    /// counts and errors as [`Nand::read`].
    #[inline]
    pub fn read_crc(&mut self, ppn: Ppn, at_ns: u64, level: u8, data: &mut [u8], oob: &mut [u8]) -> Result<(OpTime, u32), NandError> {
        let mut crc = 0;
        let t = self.read_at_level(ppn, at_ns, level, Some(data), oob, Some(&mut crc), None, None)?;
        Ok((t, crc))
    }

    /// A read (retry `level`) of the data and spare areas whose caller
    /// keeps only what the data's bytes say: whether they read erased (all
    /// 0xFF) and, if `crc`, their CRC-32 (as [`Nand::read_crc`]). A
    /// full-data array answers both from what it remembers, so the page is
    /// not copied out: recovery reads every page written since the
    /// checkpoint, and probes where each block's writes end, for these
    /// facts alone. `scratch` (a page) receives the bytes only where the
    /// array needs them to answer (metadata-only mode) and on a failed
    /// decode, where it holds what [`Nand::read`] would hand up. Same
    /// operation, time, counts and errors as [`Nand::read`].
    #[inline]
    pub fn read_digest(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        level: u8,
        (scratch, oob): (&mut [u8], &mut [u8]),
        crc: bool,
    ) -> Result<(OpTime, DataDigest), NandError> {
        self.check_len("read data", scratch.len(), self.cfg.geometry.page_size as usize)?;
        let (mut sum, mut erased) = (0, false);
        let t = self.read_at_level(
            ppn,
            at_ns,
            level,
            Some(scratch),
            oob,
            crc.then_some(&mut sum),
            Some(&mut erased),
            None,
        )?;
        Ok((
            t,
            DataDigest {
                crc: crc.then_some(sum),
                erased,
            },
        ))
    }

    /// A read retry: rereads the page with read thresholds shifted to retry
    /// level `level` (1 and up; see `bit_errors.rs`). Without a fault model it
    /// is a plain read.
    #[inline]
    pub fn read_retry(&mut self, ppn: Ppn, at_ns: u64, level: u8, data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<OpTime, NandError> {
        self.read_at_level(ppn, at_ns, level, data, oob, None, None, None)
    }

    /// A read (retry `level`) that hands up a packed spare area as its
    /// fields ([`ReadFields`]) instead of its bytes: GC reads every page it
    /// copies, and its owner would only decode the bytes the codec's
    /// `unpack` wrote from these fields (two CRC-32s of the record; a tenth
    /// of a steady-state random-write run's instructions). `fields` set to
    /// `Some` (in place) leaves `oob` as it was; `None` (a spare area not
    /// packed, a store of bytes, a failed decode): the bytes are in `oob`
    /// as [`Nand::read`] writes them. Same operation, time, counts and
    /// errors as [`Nand::read`].
    #[inline]
    pub fn read_fields(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        level: u8,
        data: Option<&mut [u8]>,
        (oob, fields): (&mut [u8], &mut Option<ReadFields>),
    ) -> Result<OpTime, NandError> {
        self.read_at_level(ppn, at_ns, level, data, oob, None, None, Some(fields))
    }

    /// Retry levels the fault model offers (0 without one).
    pub fn read_retry_levels(&self) -> u8 {
        self.faults.map_or(0, |f| f.read_retries)
    }

    /// `crc`: set to the CRC-32 of the data handed up, on success;
    /// `erased`: set to whether it is all 0xFF, on success, the data then
    /// copied out only where the array cannot answer without it
    /// ([`Nand::read_digest`]); `fields`: set to the packed spare area's
    /// fields, `oob` then left unwritten, where it is packed and the
    /// decode succeeds ([`Nand::read_fields`]).
    #[allow(clippy::too_many_arguments)]
    fn read_at_level(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        level: u8,
        mut data: Option<&mut [u8]>,
        oob: &mut [u8],
        crc: Option<&mut u32>,
        erased: Option<&mut bool>,
        mut fields: Option<&mut Option<ReadFields>>,
    ) -> Result<OpTime, NandError> {
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        self.check_len("read oob", oob.len(), g.oob_size as usize)?;
        if let Some(buf) = &data {
            // In metadata-only mode an empty buffer reads the data area (its
            // time, its bit errors) without handing it up: the mode stores no data.
            let discard = buf.is_empty() && self.cfg.data_mode == DataMode::MetaOnly;
            if !discard {
                self.check_len("read data", buf.len(), g.page_size as usize)?;
            }
        }
        let kind = if data.is_some() { FlashOp::Read } else { FlashOp::OobRead };
        if self.begin_op(kind, ppn, at_ns)?.is_some() {
            // A read changes nothing on the array: the cut just stops it.
            return Err(NandError::PowerLoss);
        }
        let (unit, channel) = self.unit_channel(ppn);
        // Filled in place: the fields are the hot path's (GC's reads).
        match fields.as_deref_mut() {
            Some(out) => {
                if self.spare.read_fields_into(ppn, out.insert(ReadFields::EMPTY)) {
                    debug_assert!(
                        out.as_ref().is_some_and(|f| self.fields_read_as_bytes(ppn, f)),
                        "page {ppn}: its packed fields are not its spare area"
                    );
                } else {
                    *out = None;
                    self.spare.read(ppn, oob);
                }
            }
            None => self.spare.read(ppn, oob),
        }
        // Looked up once for everything the read asks of the page.
        let programmed = self.programs.get(ppn) != 0;
        // Whether the data's bytes are left in the array (`read_digest`).
        let reads_erased = erased.is_some().then(|| self.data_reads_erased(ppn, programmed)).flatten();
        let bytes = match &mut data {
            Some(buf) => {
                if !buf.is_empty() && reads_erased.is_none() {
                    self.copy_data_out_as(ppn, programmed, buf);
                }
                self.stats.reads += 1;
                g.page_size + g.oob_size
            }
            None => {
                self.stats.oob_reads += 1;
                g.oob_size
            }
        };
        if level > 0 {
            self.stats.read_retries += 1;
        }
        let t = self.cfg.timing;
        let xfer = t.transfer_ns(bytes);
        let time = self.clocks.read(unit, channel, at_ns, t.read_ns, xfer);
        self.stats.busy_ns += t.read_ns + xfer;
        self.trace_times(time.done_ns, time.done_ns);
        // The fault model draws bit errors for programmed pages only.
        if let Some(model) = self.faults.as_ref().filter(|_| programmed).copied() {
            let key = self.page_key(ppn);
            let data_bytes = if data.is_some() { g.page_size } else { 0 };
            let d = model.decode(key, data_bytes, g.oob_size, self.cfg.endurance, level);
            self.stats.corrected_bits += d.corrected_bits;
            if !d.ok() {
                self.stats.uncorrectable_reads += 1;
                // A failed decode hands up bytes, as `read` does.
                if let Some(f) = fields.filter(|f| f.is_some()) {
                    *f = None;
                    self.spare.read(ppn, oob);
                }
                // What the controller hands up from a failed decode is not the
                // page: corrupt it so a caller that ignored the error would
                // see a checksum mismatch rather than good data.
                if d.oob_failed {
                    scramble(&model, key, 0, oob);
                }
                if let Some(buf) = data {
                    if reads_erased.is_some() {
                        // A failed read hands up bytes: the page's, or garbage.
                        self.copy_data_out_as(ppn, programmed, buf);
                    }
                    if d.data_failed {
                        scramble(&model, key, 1, buf);
                    }
                }
                return Err(NandError::Uncorrectable {
                    ppn,
                    data: d.data_failed,
                    oob: d.oob_failed,
                    done_ns: time.done_ns,
                });
            }
        }
        // A decode that succeeded hands up the bytes the cells hold.
        if let Some(buf) = data {
            if let Some(crc) = crc {
                *crc = self.remembered_data_crc_as(ppn, programmed).unwrap_or_else(|| {
                    debug_assert!(reads_erased.is_none(), "bytes left in the array have a remembered CRC");
                    crc32fast::hash(buf)
                });
            }
            if let Some(e) = erased {
                *e = reads_erased.unwrap_or_else(|| crate::is_erased(buf));
            }
        }
        Ok(time)
    }

    /// Do `f` unpack to the bytes a read of the spare area of `ppn` hands up?
    fn fields_read_as_bytes(&self, ppn: Ppn, f: &ReadFields) -> bool {
        let Some(codec) = self.spare.codec() else { return false };
        let os = self.cfg.geometry.oob_size as usize;
        let (mut bytes, mut unpacked) = (vec![0u8; os], vec![0u8; os]);
        self.spare.read(ppn, &mut bytes);
        f.unpack(&codec, &mut unpacked);
        bytes == unpacked
            && f.protocol[codec.protocol_bytes..].iter().all(|&b| b == 0)
            && f.flags[codec.flag_bytes..].iter().all(|&b| b == 0xFF)
    }

    pub(super) fn page_key(&self, ppn: Ppn) -> PageKey {
        let block = self.cfg.geometry.block_of(ppn);
        PageKey {
            ppn,
            erase_count: self.erase_counts[block as usize],
        }
    }
}

/// What a read's data says, without the data ([`Nand::read_digest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataDigest {
    /// The CRC-32 (IEEE, as `crc32fast` computes it) of the data, if asked.
    pub crc: Option<u32>,
    /// Whether every byte is 0xFF, as an erase leaves the cells.
    pub erased: bool,
}

/// Corrupts a buffer a failed ECC decode hands up: one byte in 64 flipped,
/// positions and masks drawn from the page's key.
fn scramble(model: &FaultModel, key: PageKey, area: u64, buf: &mut [u8]) {
    let mut h = model
        .uniform(&[SALT_GARBAGE, key.ppn as u64, key.erase_count as u64, area])
        .to_bits();
    for chunk in buf.chunks_mut(64) {
        h = crate::bit_errors::splitmix64(h);
        let i = (h % chunk.len() as u64) as usize;
        chunk[i] ^= ((h >> 32) as u8) | 1;
    }
}
