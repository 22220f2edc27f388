//! MQSim's `ssdconfig.xml` (`--mqsim-config FILE`): the device parameters of
//! MQSim (CMU-SAFARI), imported so a user's MQSim setup runs here unchanged.
//!
//! The file is `<Execution_Parameter_Set>` holding `<Host_Parameter_Set>` and
//! `<Device_Parameter_Set>`, which holds the device's fields and a
//! `<Flash_Parameter_Set>` with the flash chip's; each field is an element
//! whose text is its value (MQSim's units: nanoseconds, bytes, MT/s).
//!
//! What maps (docs/device-files.md's table has every field):
//! - `Flash_Channel_Count` -> channels; `Chip_No_Per_Channel` x
//!   `Die_No_Per_Chip` -> dies per channel (MQSim's chips only group dies);
//!   planes, blocks, pages, `Page_Capacity`, `Page_Metadat_Capacity` (MQSim's
//!   spelling; `Page_Metadata_Capacity` is taken too), `Flash_Technology`;
//! - latencies: MQSim times LSB, CSB and MSB pages apart, txftl gives every
//!   page one latency: the mean of the ones the technology uses (MLC: LSB and
//!   MSB; TLC: all three), truncated to a nanosecond as MQSim's own FTL
//!   averages them. Over a block, programmed in order, the total is the same;
//! - transfer per KiB = 1024 bytes at `Channel_Transfer_Rate` (MT/s) x
//!   `Flash_Channel_Width` (bytes per transfer), rounded to a nanosecond;
//! - `Block_PE_Cycles_Limit` -> endurance; `Overprovisioning_Ratio` ->
//!   over-provisioning percent (rounded); `GC_Exec_Threshold` -> GC's low
//!   watermark as that share of the blocks; `GREEDY` -> greedy (the other
//!   policies have no counterpart: greedy, with a warning);
//!   `Static_Wearleveling_Threshold` -> the wear spread that triggers static
//!   wear leveling.
//!
//! Fields txftl needs to build the device (geometry, technology, latencies,
//! channel rate and width) are required; the policy fields take MQSim's
//! defaults when absent, as MQSim does. Every other field (caches, queues,
//! CMT, plane allocation, suspension, the host's PCIe...) has no counterpart:
//! they are listed, by name, in one warning.

use super::{
    check_geometry, check_range, label_and_stem, read, DeviceFile, DeviceFileError, FtlOptions, LATENCY_NS_MAX, WEAR_SPREAD_MAX_MAX,
};
use quick_xml::events::Event;
use std::borrow::Cow;
use std::path::Path;
use txftl_ftl::GcPolicy;
use txftl_nand::{CellType, Geometry, Preset, Timing};

const ROOT: &str = "Execution_Parameter_Set";
const DEVICE: &str = "Device_Parameter_Set";
const FLASH: &str = "Flash_Parameter_Set";

/// MQSim's defaults (`Device_Parameter_Set.cpp`, `Flash_Parameter_Set.cpp`)
/// for the policy fields, used when the file leaves them out.
const PE_CYCLES_DEFAULT: u64 = 10_000;
const OVERPROVISIONING_DEFAULT: f64 = 0.02;
const GC_THRESHOLD_DEFAULT: f64 = 0.05;
const GC_POLICY_DEFAULT: &str = "RGA";
const STATIC_WL_THRESHOLD_DEFAULT: u64 = 100;

/// MQSim's GC victim policies.
const GC_POLICIES: &[&str] = &["GREEDY", "RGA", "RANDOM", "RANDOM_P", "RANDOM_PP", "FIFO"];

/// Reads MQSim's `ssdconfig.xml` at `path`.
pub fn load(path: &Path) -> Result<DeviceFile, DeviceFileError> {
    let (label, stem) = label_and_stem("mqsim", path);
    let text = read(&label, path)?;
    let mut file = parse(&text, &label, &stem)?;
    file.option = format!("--mqsim-config {}", path.display());
    Ok(file)
}

/// Where a field sits: the names of the elements around it, outermost first.
#[derive(Debug)]
struct Field {
    parents: Vec<String>,
    name: String,
    value: String,
    line: usize,
}

/// The leaf elements of the document (elements without child elements), in
/// document order, and the root's name.
fn read_fields(text: &str) -> Result<(String, Vec<Field>), String> {
    let line_at = |pos: u64| {
        text.as_bytes()[..(pos as usize).min(text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    };
    let mut reader = quick_xml::Reader::from_str(text);
    // (name, text, has child elements, line)
    let mut stack: Vec<(String, String, bool, usize)> = Vec::new();
    let mut root: Option<String> = None;
    let mut fields = Vec::new();
    loop {
        let pos = reader.buffer_position();
        let event = reader
            .read_event()
            .map_err(|e| format!("not well-formed XML (line {}): {e}", line_at(reader.error_position())))?;
        match event {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                match stack.last_mut() {
                    Some(top) => top.2 = true,
                    None if root.is_some() => return Err(format!("a second root element <{name}> (line {})", line_at(pos))),
                    None => root = Some(name.clone()),
                }
                stack.push((name, String::new(), false, line_at(pos)));
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                match stack.last_mut() {
                    Some(top) => {
                        top.2 = true;
                        fields.push(Field {
                            parents: stack.iter().map(|s| s.0.clone()).collect(),
                            name,
                            value: String::new(),
                            line: line_at(pos),
                        });
                    }
                    None if root.is_some() => return Err(format!("a second root element <{name}/> (line {})", line_at(pos))),
                    None => root = Some(name),
                }
            }
            Event::Text(t) => {
                let s = t
                    .unescape()
                    .map_err(|e| format!("not well-formed XML (line {}): {e}", line_at(pos)))?;
                match stack.last_mut() {
                    Some(top) => top.1.push_str(&s),
                    None if s.trim().is_empty() => {}
                    None => return Err(format!("text outside any element (line {}): not XML", line_at(pos))),
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.1.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::End(_) => {
                // quick-xml checks that the end tag matches the open one.
                let Some((name, value, has_children, line)) = stack.pop() else {
                    return Err(format!("an end tag with no open element (line {})", line_at(pos)));
                };
                if !has_children && !stack.is_empty() {
                    fields.push(Field {
                        parents: stack.iter().map(|s| s.0.clone()).collect(),
                        name,
                        value: value.trim().to_string(),
                        line,
                    });
                }
            }
            Event::Eof => {
                if let Some((name, ..)) = stack.last() {
                    return Err(format!("the file ends inside <{name}>: not well-formed XML"));
                }
                break;
            }
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    let root = root.ok_or("no XML element in it: not an MQSim ssdconfig.xml")?;
    Ok((root, fields))
}

/// The fields, and which of them the import used.
struct Fields<'a> {
    label: &'a str,
    list: Vec<Field>,
    used: Vec<bool>,
}

impl Fields<'_> {
    fn is_in(f: &Field, section: &str) -> bool {
        let want: &[&str] = if section == FLASH {
            &[ROOT, DEVICE, FLASH]
        } else {
            &[ROOT, DEVICE]
        };
        f.parents.iter().map(String::as_str).eq(want.iter().copied())
    }

    /// The field's value and line (the last one, as MQSim reads them in order),
    /// marked used.
    fn get(&mut self, section: &str, name: &str) -> Option<(String, usize)> {
        let mut found = None;
        for (i, f) in self.list.iter().enumerate() {
            if f.name == name && Self::is_in(f, section) {
                self.used[i] = true;
                found = Some((f.value.clone(), f.line));
            }
        }
        found
    }

    fn bad(&self, field: &str, problem: String) -> DeviceFileError {
        DeviceFileError::Field {
            label: self.label.to_string(),
            field: field.to_string(),
            problem,
        }
    }

    /// A field txftl needs.
    fn need(&mut self, section: &str, name: &str) -> Result<(String, usize), DeviceFileError> {
        self.get(section, name)
            .ok_or_else(|| self.bad(name, format!("missing from <{section}> (txftl needs it to build the device)")))
    }

    /// A whole number in `min..=max`.
    fn whole(&self, name: &str, (value, line): (String, usize), min: u64, max: u64) -> Result<u64, DeviceFileError> {
        let n: u64 = value
            .parse()
            .map_err(|_| self.bad(name, format!("`{value}` is not a whole number (line {line})")))?;
        check_range(self.label, name, n, min, max)?;
        Ok(n)
    }

    /// A required count (at least 1, at most `u32::MAX`).
    fn count(&mut self, section: &str, name: &str) -> Result<u32, DeviceFileError> {
        let v = self.need(section, name)?;
        Ok(self.whole(name, v, 1, u32::MAX as u64)? as u32)
    }

    /// A required latency in nanoseconds.
    fn latency(&mut self, name: &str) -> Result<u64, DeviceFileError> {
        let v = self.need(FLASH, name)?;
        self.whole(name, v, 1, LATENCY_NS_MAX)
    }

    /// A fraction in `0..1` (`0` itself allowed when `zero_ok`).
    fn ratio(&self, name: &str, (value, line): (String, usize), zero_ok: bool) -> Result<f64, DeviceFileError> {
        let r: f64 = value
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite())
            .ok_or_else(|| self.bad(name, format!("`{value}` is not a number (line {line})")))?;
        if !(0.0..1.0).contains(&r) || (r == 0.0 && !zero_ok) {
            let lower = if zero_ok { "0 <=" } else { "0 <" };
            return Err(self.bad(name, format!("{value} is not a fraction ({lower} x < 1) (line {line})")));
        }
        Ok(r)
    }

    /// MQSim's booleans: anything but `false` (any case) is true.
    fn flag(&mut self, section: &str, name: &str) -> bool {
        self.get(section, name).is_none_or(|(v, _)| !v.eq_ignore_ascii_case("false"))
    }

    /// Names of the fields the import did not use, once each, in file order.
    fn unused(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (f, used) in self.list.iter().zip(&self.used) {
            if !used && !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
        names
    }
}

/// The channel time of one KiB at `rate_mts` million transfers per second of
/// `width_bytes` bytes each, rounded to a nanosecond.
pub(super) fn transfer_ns_per_kib(rate_mts: u64, width_bytes: u64) -> u64 {
    let bytes_per_us = rate_mts * width_bytes;
    (1024 * 1000 + bytes_per_us / 2) / bytes_per_us
}

/// The mean of the latencies, truncated to a nanosecond (as MQSim averages them).
pub(super) fn mean_ns(latencies: &[u64]) -> u64 {
    latencies.iter().sum::<u64>() / latencies.len() as u64
}

/// Over-provisioning percent from MQSim's ratio, rounded to a whole percent.
pub(super) fn overprovision_pct(ratio: f64) -> u32 {
    (ratio * 100.0).round() as u32
}

/// The device `text` describes; `label` names the file in errors and
/// warnings, `stem` names the device.
pub(super) fn parse(text: &str, label: &str, stem: &str) -> Result<DeviceFile, DeviceFileError> {
    let list = read_document(text, label)?;
    let used = vec![false; list.len()];
    let mut f = Fields { label, list, used };
    let mut notes: Vec<String> = Vec::new();
    let geometry = geometry(&mut f)?;
    let timing = timing(&mut f, geometry.cell, &mut notes)?;
    let policies = policies(&mut f, &mut notes)?;
    let warnings = warnings(&f, notes);
    Ok(DeviceFile {
        preset: Preset {
            name: Cow::Owned(stem.to_string()),
            models: Cow::Owned(format!("the device of MQSim's {label}")),
            source: Cow::Borrowed(
                "MQSim's device parameters, mapped as docs/device-files.md's \"MQSim's ssdconfig.xml\" says \
                 (MLC and TLC latencies are the mean of their page types)",
            ),
            geometry,
            timing,
            endurance: policies.endurance,
        },
        ftl: FtlOptions {
            overprovision_pct: Some(policies.op_pct),
            gc_policy: Some(GcPolicy::Greedy),
            gc_low_blocks: None,
            gc_low_share: Some(policies.gc_share),
            gc_high_blocks: None,
            checkpoint_every_pages: None,
            wear_spread_max: Some(policies.spread),
        },
        label: label.to_string(),
        option: String::new(),
        warnings,
    })
}

/// The document's fields, once it is known to be an MQSim `ssdconfig.xml`:
/// its root is [`ROOT`], with a [`DEVICE`] section holding a [`FLASH`] one,
/// each with fields.
fn read_document(text: &str, label: &str) -> Result<Vec<Field>, DeviceFileError> {
    let syntax = |message: String| DeviceFileError::Syntax {
        label: label.to_string(),
        message,
    };
    let (root, list) = read_fields(text).map_err(syntax)?;
    if root != ROOT {
        return Err(syntax(format!(
            "the root element is <{root}>, not <{ROOT}>: not an MQSim ssdconfig.xml (a workload file?)"
        )));
    }
    for (section, parents) in [(DEVICE, &[ROOT][..]), (FLASH, &[ROOT, DEVICE][..])] {
        let present = list.iter().any(|f| {
            f.parents.len() > parents.len()
                && f.parents[..parents.len()].iter().map(String::as_str).eq(parents.iter().copied())
                && f.parents[parents.len()] == section
        });
        if !present {
            return Err(syntax(format!(
                "no <{section}> with fields in <{}>: not an MQSim ssdconfig.xml",
                parents.join("> <")
            )));
        }
    }
    Ok(list)
}

/// The flash array: the technology, and the geometry checked as a device
/// file's is (errors name MQSim's fields).
fn geometry(f: &mut Fields) -> Result<Geometry, DeviceFileError> {
    let (tech, line) = f.need(FLASH, "Flash_Technology")?;
    let cell = match tech.to_ascii_uppercase().as_str() {
        "SLC" => CellType::Slc,
        "MLC" => CellType::Mlc,
        "TLC" => CellType::Tlc,
        _ => return Err(f.bad("Flash_Technology", format!("`{tech}` is not SLC, MLC or TLC (line {line})"))),
    };
    let channels = f.count(DEVICE, "Flash_Channel_Count")?;
    let chips = f.count(DEVICE, "Chip_No_Per_Channel")?;
    let dies = f.count(FLASH, "Die_No_Per_Chip")?;
    let dies_per_channel = chips
        .checked_mul(dies)
        .ok_or_else(|| f.bad("Die_No_Per_Chip", format!("{chips} chips x {dies} dies per channel is too many")))?;
    let oob_name = if f.list.iter().any(|x| x.name == "Page_Metadat_Capacity") {
        "Page_Metadat_Capacity"
    } else {
        "Page_Metadata_Capacity"
    };
    let geometry = Geometry {
        channels,
        dies_per_channel,
        planes_per_die: f.count(FLASH, "Plane_No_Per_Die")?,
        blocks_per_plane: f.count(FLASH, "Block_No_Per_Plane")?,
        pages_per_block: f.count(FLASH, "Page_No_Per_Block")?,
        page_size: f.count(FLASH, "Page_Capacity")?,
        oob_size: f.count(FLASH, oob_name)?,
        cell,
        // MQSim has no partial programming: one program per page.
        nop: 1,
    };
    check_geometry(f.label, &geometry, |ours| {
        match ours {
            "channels" => "Flash_Channel_Count",
            "dies_per_channel" => "Chip_No_Per_Channel x Die_No_Per_Chip",
            "planes_per_die" => "Plane_No_Per_Die",
            "blocks_per_plane" => "Block_No_Per_Plane",
            "pages_per_block" => "Page_No_Per_Block",
            "page_size" => "Page_Capacity",
            "oob_size" => oob_name,
            other => other,
        }
        .to_string()
    })?;
    Ok(geometry)
}

/// The latencies (the mean over the page types `cell` uses, noted in
/// `notes` when there are several) and the channel's transfer time.
fn timing(f: &mut Fields, cell: CellType, notes: &mut Vec<String>) -> Result<Timing, DeviceFileError> {
    let levels: &[&str] = match cell {
        CellType::Slc => &["LSB"],
        CellType::Mlc => &["LSB", "MSB"],
        CellType::Tlc => &["LSB", "CSB", "MSB"],
    };
    let mut read = Vec::new();
    let mut program = Vec::new();
    for level in levels {
        read.push(f.latency(&format!("Page_Read_Latency_{level}"))?);
        program.push(f.latency(&format!("Page_Program_Latency_{level}"))?);
    }
    let (read_ns, program_ns) = (mean_ns(&read), mean_ns(&program));
    if levels.len() > 1 {
        let (last, rest) = levels.split_last().expect("two or three levels");
        notes.push(format!(
            "read and program latencies are the mean of {} and {last} pages (txftl gives every page one latency): read {read_ns} ns, program {program_ns} ns",
            rest.join(", ")
        ));
    }
    let erase_ns = f.latency("Block_Erase_Latency")?;
    let rate = f.need(DEVICE, "Channel_Transfer_Rate")?;
    let rate = f.whole("Channel_Transfer_Rate", rate, 1, 1_000_000)?;
    let width = f.need(DEVICE, "Flash_Channel_Width")?;
    let width = f.whole("Flash_Channel_Width", width, 1, 1_024)?;
    Ok(Timing {
        read_ns,
        program_ns,
        partial_program_ns: program_ns,
        erase_ns,
        transfer_ns_per_kib: transfer_ns_per_kib(rate, width),
    })
}

/// The policy fields' values, as the device file takes them.
struct Policies {
    endurance: u32,
    op_pct: u32,
    gc_share: f64,
    spread: u32,
}

/// The policy fields: MQSim's defaults when absent, as MQSim does (the
/// defaults used, and the approximations, are noted in `notes`).
fn policies(f: &mut Fields, notes: &mut Vec<String>) -> Result<Policies, DeviceFileError> {
    let mut defaults_used = Vec::new();
    let endurance = match f.get(FLASH, "Block_PE_Cycles_Limit") {
        Some(v) => f.whole("Block_PE_Cycles_Limit", v, 1, u32::MAX as u64)? as u32,
        None => {
            defaults_used.push(format!("Block_PE_Cycles_Limit {PE_CYCLES_DEFAULT}"));
            PE_CYCLES_DEFAULT as u32
        }
    };
    let op_pct = overprovision(f, notes, &mut defaults_used)?;
    let gc_share = match f.get(DEVICE, "GC_Exec_Threshold") {
        Some(v) => f.ratio("GC_Exec_Threshold", v, false)?,
        None => {
            defaults_used.push(format!("GC_Exec_Threshold {GC_THRESHOLD_DEFAULT}"));
            GC_THRESHOLD_DEFAULT
        }
    };
    gc_policy(f, notes, &mut defaults_used)?;
    let spread = match f.get(DEVICE, "Static_Wearleveling_Threshold") {
        Some(v) => f.whole("Static_Wearleveling_Threshold", v, 1, WEAR_SPREAD_MAX_MAX as u64)? as u32,
        None => {
            defaults_used.push(format!("Static_Wearleveling_Threshold {STATIC_WL_THRESHOLD_DEFAULT}"));
            STATIC_WL_THRESHOLD_DEFAULT as u32
        }
    };
    for (name, what) in [
        ("Static_Wearleveling_Enabled", "static"),
        ("Dynamic_Wearleveling_Enabled", "dynamic"),
    ] {
        if !f.flag(DEVICE, name) {
            notes.push(format!(
                "{name} is false, but txftl's {what} wear leveling cannot be turned off: it stays on"
            ));
        }
    }
    if !defaults_used.is_empty() {
        notes.push(format!("not in the file, MQSim's defaults used: {}", defaults_used.join(", ")));
    }
    Ok(Policies {
        endurance,
        op_pct,
        gc_share,
        spread,
    })
}

/// `Overprovisioning_Ratio` as a whole percent (a rounding noted in `notes`).
fn overprovision(f: &mut Fields, notes: &mut Vec<String>, defaults_used: &mut Vec<String>) -> Result<u32, DeviceFileError> {
    let op_ratio = match f.get(DEVICE, "Overprovisioning_Ratio") {
        Some(v) => f.ratio("Overprovisioning_Ratio", v, true)?,
        None => {
            defaults_used.push(format!("Overprovisioning_Ratio {OVERPROVISIONING_DEFAULT}"));
            OVERPROVISIONING_DEFAULT
        }
    };
    let op_pct = overprovision_pct(op_ratio);
    check_range(f.label, "Overprovisioning_Ratio", op_pct, 0, 99)?;
    if (op_ratio * 100.0 - op_pct as f64).abs() > 1e-9 {
        notes.push(format!("Overprovisioning_Ratio {op_ratio} is rounded to {op_pct}%"));
    }
    Ok(op_pct)
}

/// Checks `GC_Block_Selection_Policy` is one of MQSim's; txftl's GC is
/// greedy whatever it says (any other policy is noted in `notes`).
fn gc_policy(f: &mut Fields, notes: &mut Vec<String>, defaults_used: &mut Vec<String>) -> Result<(), DeviceFileError> {
    let policy = match f.get(DEVICE, "GC_Block_Selection_Policy") {
        Some((v, line)) => {
            let v = v.to_ascii_uppercase();
            if !GC_POLICIES.contains(&v.as_str()) {
                return Err(f.bad(
                    "GC_Block_Selection_Policy",
                    format!("`{v}` is not one of MQSim's {} (line {line})", GC_POLICIES.join(", ")),
                ));
            }
            v
        }
        None => {
            defaults_used.push(format!("GC_Block_Selection_Policy {GC_POLICY_DEFAULT}"));
            GC_POLICY_DEFAULT.to_string()
        }
    };
    if policy != "GREEDY" {
        notes.push(format!(
            "GC_Block_Selection_Policy {policy} has no counterpart: GC picks victims greedily (fewest valid pages)"
        ));
    }
    Ok(())
}

/// The warnings on standard error: the fields the import did not use, and
/// the approximations it made.
fn warnings(f: &Fields, notes: Vec<String>) -> Vec<String> {
    let label = f.label;
    let mut warnings = Vec::new();
    let unused = f.unused();
    if !unused.is_empty() {
        warnings.push(format!(
            "{label}: {} fields have no counterpart in txftl and are ignored: {}",
            unused.len(),
            unused.join(", ")
        ));
    }
    if !notes.is_empty() {
        warnings.push(format!("{label}: approximated: {}", notes.join("; ")));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../tests/data/ssdconfig.xml");

    fn import(text: &str) -> Result<DeviceFile, String> {
        parse(text, "mqsim ssd.xml", "ssd").map_err(|e| e.to_string())
    }

    #[test]
    fn transfer_time_per_kib_from_rate_and_width() {
        // 333 MT/s x 1 byte: 1024 bytes in 3,075.08 ns.
        assert_eq!(transfer_ns_per_kib(333, 1), 3_075);
        assert_eq!(transfer_ns_per_kib(400, 1), 2_560);
        assert_eq!(transfer_ns_per_kib(800, 2), 640);
        assert_eq!(transfer_ns_per_kib(1, 1), 1_024_000);
        // The jasmine preset's 80 MB/s bus.
        assert_eq!(transfer_ns_per_kib(80, 1), 12_800);
    }

    #[test]
    fn latencies_are_means_and_ratios_percents() {
        assert_eq!(mean_ns(&[75_000]), 75_000);
        assert_eq!(mean_ns(&[75_000, 750_000]), 412_500);
        assert_eq!(mean_ns(&[1, 2]), 1, "truncated, as MQSim does");
        assert_eq!(mean_ns(&[50_000, 100_000, 150_001]), 100_000);
        assert_eq!(overprovision_pct(0.07), 7);
        assert_eq!(overprovision_pct(0.125), 13);
        assert_eq!(overprovision_pct(0.0), 0);
    }

    #[test]
    fn the_sample_maps_field_by_field() {
        let d = import(SAMPLE).unwrap();
        let g = d.preset.geometry;
        // 4 chips of 2 dies per channel.
        assert_eq!((g.channels, g.dies_per_channel, g.planes_per_die), (8, 8, 2));
        assert_eq!(
            (g.blocks_per_plane, g.pages_per_block, g.page_size, g.oob_size),
            (2048, 256, 8192, 448)
        );
        assert_eq!((g.cell, g.nop), (CellType::Mlc, 1));
        let t = d.preset.timing;
        assert_eq!(
            (t.read_ns, t.program_ns, t.partial_program_ns, t.erase_ns),
            (75_000, 75_000, 75_000, 3_800_000)
        );
        assert_eq!(t.transfer_ns_per_kib, 3_075);
        assert_eq!(d.preset.endurance, 10_000);
        assert_eq!(d.preset.name, "ssd");
        assert_eq!(d.ftl.overprovision_pct, Some(7));
        assert_eq!(d.ftl.gc_low_share, Some(0.05));
        assert_eq!(d.ftl.gc_policy, Some(GcPolicy::Greedy));
        assert_eq!(d.ftl.wear_spread_max, Some(100));
        let [unmapped, approx] = &d.warnings[..] else {
            panic!("{:?}", d.warnings)
        };
        for name in [
            "PCIe_Lane_Count",
            "Seed",
            "Data_Cache_Capacity",
            "CMT_Capacity",
            "Plane_Allocation_Scheme",
            "IO_Queue_Depth",
            "Page_Read_Latency_CSB",
            "Suspend_Erase_Time",
            "Use_Copyback_for_GC",
        ] {
            assert!(unmapped.contains(name), "{name} not listed: {unmapped}");
        }
        for name in [
            "Flash_Channel_Count",
            "Page_No_Per_Block",
            "Block_Erase_Latency",
            "GC_Exec_Threshold",
        ] {
            assert!(!unmapped.contains(&format!(" {name},")), "{name} is mapped: {unmapped}");
        }
        assert!(approx.contains("mean of LSB and MSB pages") && approx.contains("RGA"), "{approx}");
    }

    #[test]
    fn mlc_latencies_are_the_mean_of_lsb_and_msb() {
        let text = SAMPLE.replace("<Page_Program_Latency_MSB>75000<", "<Page_Program_Latency_MSB>750000<");
        let d = import(&text).unwrap();
        assert_eq!(d.preset.timing.program_ns, 412_500);
        assert!(d.warnings[1].contains("program 412500 ns"), "{:?}", d.warnings);
    }

    #[test]
    fn tlc_averages_three_page_types_and_slc_takes_lsb() {
        let tlc = SAMPLE
            .replace(">MLC<", ">tlc<")
            .replace("<Page_Read_Latency_CSB>75000<", "<Page_Read_Latency_CSB>90000<");
        let d = import(&tlc).unwrap();
        assert_eq!(d.preset.geometry.cell, CellType::Tlc);
        assert_eq!(d.preset.timing.read_ns, (75_000 + 90_000 + 75_000) / 3);
        let slc = SAMPLE.replace(">MLC<", ">SLC<");
        let d = import(&slc).unwrap();
        assert_eq!((d.preset.timing.read_ns, d.preset.timing.program_ns), (75_000, 75_000));
        assert!(
            d.warnings[0].contains("Page_Program_Latency_MSB"),
            "unused on SLC: {}",
            d.warnings[0]
        );
    }

    #[test]
    fn bad_files_are_named_errors() {
        let e = import("hello, not xml").unwrap_err();
        assert!(e.starts_with("mqsim ssd.xml: text outside any element"), "{e}");
        let e = import("<Execution_Parameter_Set><Device_Parameter_Set>").unwrap_err();
        assert!(e.contains("ends inside <Device_Parameter_Set>"), "{e}");
        let e = import("<a><b>1</c></a>").unwrap_err();
        assert!(e.starts_with("mqsim ssd.xml: not well-formed XML"), "{e}");
        let e = import("<MQSim_IO_Scenarios><IO_Scenario/></MQSim_IO_Scenarios>").unwrap_err();
        assert!(e.contains("root element is <MQSim_IO_Scenarios>"), "{e}");
        let missing = SAMPLE.replace("<Page_No_Per_Block>256</Page_No_Per_Block>", "");
        let e = import(&missing).unwrap_err();
        assert_eq!(
            e,
            "mqsim ssd.xml: Page_No_Per_Block: missing from <Flash_Parameter_Set> (txftl needs it to build the device)"
        );
        let e = import(&SAMPLE.replace(">MLC<", ">QLC<")).unwrap_err();
        assert!(
            e.starts_with("mqsim ssd.xml: Flash_Technology: `QLC` is not SLC, MLC or TLC (line "),
            "{e}"
        );
        let e = import(&SAMPLE.replace("<Page_Capacity>8192<", "<Page_Capacity>8k<")).unwrap_err();
        assert!(e.starts_with("mqsim ssd.xml: Page_Capacity: `8k` is not a whole number"), "{e}");
        let e = import(&SAMPLE.replace("<Page_Capacity>8192<", "<Page_Capacity>1000<")).unwrap_err();
        assert_eq!(e, "mqsim ssd.xml: Page_Capacity: 1000 bytes is not a multiple of 512");
        let e = import(&SAMPLE.replace("<Die_No_Per_Chip>2<", "<Die_No_Per_Chip>0<")).unwrap_err();
        assert_eq!(e, "mqsim ssd.xml: Die_No_Per_Chip: 0 is below the minimum 1");
        let e = import(&SAMPLE.replace("<GC_Block_Selection_Policy>RGA<", "<GC_Block_Selection_Policy>LRU<")).unwrap_err();
        assert!(
            e.starts_with("mqsim ssd.xml: GC_Block_Selection_Policy: `LRU` is not one of MQSim's"),
            "{e}"
        );
        let e = import(&SAMPLE.replace("<Overprovisioning_Ratio>0.07<", "<Overprovisioning_Ratio>1.5<")).unwrap_err();
        assert!(e.starts_with("mqsim ssd.xml: Overprovisioning_Ratio: 1.5 is not a fraction"), "{e}");
    }

    #[test]
    fn policy_fields_take_mqsim_defaults() {
        let text = SAMPLE
            .replace("<Block_PE_Cycles_Limit>10000</Block_PE_Cycles_Limit>", "")
            .replace("<Overprovisioning_Ratio>0.07</Overprovisioning_Ratio>", "");
        let d = import(&text).unwrap();
        assert_eq!((d.preset.endurance, d.ftl.overprovision_pct), (10_000, Some(2)));
        assert!(
            d.warnings[1].contains("MQSim's defaults used: Block_PE_Cycles_Limit 10000, Overprovisioning_Ratio 0.02"),
            "{:?}",
            d.warnings
        );
    }
}
