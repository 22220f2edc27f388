//! `plain`: the page-mapping FTL with no transaction support, the baseline
//! every paper compares against. A host that needs atomicity on it must keep a
//! journal. It is the framework with no hooks.

use txftl_ftl::Hooks;

#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

impl Hooks for Plain {
    fn name(&self) -> &'static str {
        "plain"
    }
}

/// `plain-canary`: `plain` run with a deliberately broken framework option
/// ([`txftl_ftl::Canary::ReuseBeforeCheckpoint`]), for proving the crash harness
/// catches a real durability bug. Never use it for anything else.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlainCanary;

impl Hooks for PlainCanary {
    fn name(&self) -> &'static str {
        "plain-canary"
    }
}
