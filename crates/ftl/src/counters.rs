//! Counters a protocol reports under its own names, beside the framework's
//! ([`crate::DeviceStats`]): what makes the protocol special (SCC's forced
//! erases, BPCC's pinned pages), which no other protocol has and the
//! framework does not know. The protocol's registry entry lists them
//! ([`CounterSpec`]), with the help text reports print beside each.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// The most counters one protocol reports (kept in a fixed array so that
/// [`crate::DeviceStats`] stays `Copy`).
pub const PROTOCOL_COUNTERS_MAX: usize = 20;

/// One protocol counter: its name in reports and JSON, and what it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    pub key: &'static str,
    pub help: &'static str,
}

/// A protocol's counters, by the names its entry declares.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolCounters {
    specs: &'static [CounterSpec],
    values: [u64; PROTOCOL_COUNTERS_MAX],
}

impl ProtocolCounters {
    /// Counters named by `specs`, all zero. Panics if there are more than
    /// [`PROTOCOL_COUNTERS_MAX`] (a protocol's static list: a build error in
    /// effect, caught by every test that builds the device).
    pub fn new(specs: &'static [CounterSpec]) -> ProtocolCounters {
        assert!(
            specs.len() <= PROTOCOL_COUNTERS_MAX,
            "a protocol declares at most {PROTOCOL_COUNTERS_MAX} counters"
        );
        ProtocolCounters {
            specs,
            values: [0; PROTOCOL_COUNTERS_MAX],
        }
    }

    /// The counters' names and help, in declaration order.
    pub fn specs(&self) -> &'static [CounterSpec] {
        self.specs
    }

    fn index(&self, key: &str) -> Option<usize> {
        self.specs.iter().position(|s| s.key == key)
    }

    /// The counter `key`, or 0 if the protocol has none by that name.
    pub fn get(&self, key: &str) -> u64 {
        self.index(key).map_or(0, |i| self.values[i])
    }

    /// Adds `n` to counter `key`. Panics if the protocol did not declare it:
    /// a protocol counting under a name its entry does not list is a bug.
    pub fn add(&mut self, key: &str, n: u64) {
        let i = self
            .index(key)
            .unwrap_or_else(|| panic!("protocol counter `{key}` is not declared"));
        self.values[i] += n;
    }

    /// (name, value) of every counter, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.specs.iter().zip(self.values).map(|(s, v)| (s.key, v))
    }

    /// Adds another snapshot of the same protocol's counters (sums over runs).
    pub fn add_all(&mut self, other: &ProtocolCounters) {
        if self.specs.is_empty() {
            self.specs = other.specs;
        }
        for (key, v) in other.iter() {
            if let Some(i) = self.index(key) {
                self.values[i] += v;
            }
        }
    }
}

/// `{name: value, ...}`.
impl std::fmt::Debug for ProtocolCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A map of name to value, in declaration order.
impl Serialize for ProtocolCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.specs.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[CounterSpec] = &[CounterSpec { key: "a", help: "first" }, CounterSpec { key: "b", help: "second" }];

    #[test]
    fn counts_by_name_and_serializes_as_a_map_in_order() {
        let mut c = ProtocolCounters::new(SPECS);
        c.add("b", 3);
        c.add("a", 1);
        c.add("b", 2);
        assert_eq!((c.get("a"), c.get("b"), c.get("zz")), (1, 5, 0));
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"a":1,"b":5}"#);
        let mut sum = ProtocolCounters::default();
        sum.add_all(&c);
        sum.add_all(&c);
        assert_eq!(sum.iter().collect::<Vec<_>>(), vec![("a", 2), ("b", 10)]);
    }

    #[test]
    #[should_panic(expected = "not declared")]
    fn an_undeclared_counter_is_a_bug() {
        ProtocolCounters::new(SPECS).add("c", 1);
    }
}
