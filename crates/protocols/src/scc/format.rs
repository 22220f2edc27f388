//! SCC's on-flash format: the cycle fields of every data page's OOB.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! TxFlash (Prabhakaran, Rodeheffer, Zhou; OSDI 2008) keeps in each page's
//! metadata its logical page, its version and a *next-link* naming the next
//! page of the transaction by (logical page, version); the last page links
//! back to the first, closing the cycle. The logical page is the framework's
//! own OOB field (`Oob::lpn`). Bytes 0..24 are the cycle fields BPCC writes
//! too, encoded by `crate::cycle::link` (`PageLink`, where each field is
//! described); SCC writes nothing after them. Integers little-endian:
//!
//! ```text
//!  0  u32  TxID (never 0 on an SCC page)            } cycle::link
//!  4  u64  version of this page                      }
//! 12  u32  next-link, logical page                   }
//! 16  u64  next-link, version                        }
//! 24  [u8; 8] zero
//! ```
//!
//! A GC copy keeps these bytes as they are (the framework's default), so a
//! copy stands for its original; recovery counts each (TxID, page, version)
//! once whichever copies it finds.
//!
//! There is no commit record and no other SCC metadata on flash: no mapping
//! table of its own, nothing in the checkpoints. With `summary-pages=1` the
//! last page of every data block is the framework's summary page
//! (`txftl_ftl`'s `summary.rs`), and the root records that at format
//! (`crate::cycle::summary`).

pub use crate::cycle::PageLink;
