//! Protocol options: `KEY=VALUE` pairs (`--protocol-opt`) that a protocol's
//! registry entry declares ([`OptionSpec`]) and its builder reads. The CLI,
//! the harness and the host pass them through without knowing any key.

use crate::DeviceError;
use std::collections::BTreeMap;
use std::fmt;

/// One option a protocol takes: its key, the value's name in help (`N`),
/// what it sets, and the range of values it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionSpec {
    pub key: &'static str,
    pub value_name: &'static str,
    pub help: &'static str,
    pub min: u32,
    pub max: u32,
}

/// Options given for a protocol, by key. Checked against the protocol's
/// entry ([`crate::entry::ProtocolEntry::check_options`]) before any device is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtocolOptions {
    values: BTreeMap<String, String>,
}

impl ProtocolOptions {
    pub fn new() -> ProtocolOptions {
        ProtocolOptions::default()
    }

    /// `self` with `key` set to `value` (for code and tests; the CLI parses
    /// strings with [`ProtocolOptions::parse`]).
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> ProtocolOptions {
        self.values.insert(key.to_string(), value.to_string());
        self
    }

    /// Options from `KEY=VALUE` strings; a key given twice is refused.
    pub fn parse<S: AsRef<str>>(pairs: &[S]) -> Result<ProtocolOptions, DeviceError> {
        let mut o = ProtocolOptions::new();
        for pair in pairs {
            let pair = pair.as_ref();
            let Some((k, v)) = pair.split_once('=') else {
                return Err(DeviceError::ProtocolOption(format!("`{pair}` is not KEY=VALUE")));
            };
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || v.is_empty() {
                return Err(DeviceError::ProtocolOption(format!("`{pair}` is not KEY=VALUE")));
            }
            if o.values.insert(k.to_string(), v.to_string()).is_some() {
                return Err(DeviceError::ProtocolOption(format!("`{k}` is given twice")));
            }
        }
        Ok(o)
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// The keys given, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// The value of `spec`'s key as a number in its range, or None if not given.
    pub fn u32(&self, spec: &OptionSpec) -> Result<Option<u32>, DeviceError> {
        let Some(v) = self.values.get(spec.key) else { return Ok(None) };
        match v.parse::<u32>() {
            Ok(n) if (spec.min..=spec.max).contains(&n) => Ok(Some(n)),
            _ => Err(DeviceError::ProtocolOption(format!(
                "{}={v}: {} must be a whole number from {} to {}",
                spec.key, spec.value_name, spec.min, spec.max
            ))),
        }
    }

    /// The options `entry` takes, of these: a command that runs several
    /// protocols (one per SQLite mode) gives each its own. The command
    /// refuses a key that no protocol it runs takes ([`ProtocolOptions::check_taken`]).
    pub fn for_entry(&self, entry: &crate::entry::ProtocolEntry) -> ProtocolOptions {
        ProtocolOptions {
            values: self
                .values
                .iter()
                .filter(|(k, _)| entry.option(k).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// Refuses a key that none of `entries` takes, and a value out of range
    /// for any that does.
    pub fn check_taken(&self, entries: &[&crate::entry::ProtocolEntry]) -> Result<(), DeviceError> {
        if let [one] = entries {
            return one.check_options(self);
        }
        for key in self.keys() {
            if !entries.iter().any(|e| e.option(key).is_some()) {
                let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
                return Err(DeviceError::ProtocolOption(format!(
                    "`{key}` applies to none of the protocols run here ({})",
                    names.join(", ")
                )));
            }
        }
        entries.iter().try_for_each(|e| e.check_options(&self.for_entry(e)))
    }

    /// The options as command-line arguments (` --protocol-opt K=V` each),
    /// for the command that replays a run.
    pub fn to_args(&self) -> String {
        self.values.iter().map(|(k, v)| format!(" --protocol-opt {k}={v}")).collect()
    }
}

/// `K=V,K=V`, or `none`.
impl fmt::Display for ProtocolOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.values.is_empty() {
            return f.write_str("none");
        }
        let pairs: Vec<String> = self.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&pairs.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: OptionSpec = OptionSpec {
        key: "n",
        value_name: "N",
        help: "a number",
        min: 1,
        max: 10,
    };

    #[test]
    fn parses_pairs_and_refuses_what_is_not_one() {
        let o = ProtocolOptions::parse(&["n=3", " m = 4 "]).unwrap();
        assert_eq!(o.u32(&N).unwrap(), Some(3));
        assert_eq!(o.keys().collect::<Vec<_>>(), vec!["m", "n"]);
        assert_eq!(o.to_args(), " --protocol-opt m=4 --protocol-opt n=3");
        assert_eq!(o.to_string(), "m=4,n=3");
        for bad in ["n", "=3", "n=", "n=1,n=2"] {
            let pairs: Vec<&str> = bad.split(',').collect();
            assert!(ProtocolOptions::parse(&pairs).is_err(), "{bad}");
        }
        for out in ["0", "11", "x", "-1"] {
            assert!(ProtocolOptions::new().with("n", out).u32(&N).is_err(), "{out}");
        }
        assert_eq!(ProtocolOptions::new().u32(&N).unwrap(), None);
    }
}
