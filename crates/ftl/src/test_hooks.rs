//! A protocol of no hooks at all, for the framework's own unit tests: the
//! page-mapping FTL as the framework runs it alone.

use crate::hooks::{Capabilities, EventHooks, GcHooks, Hooks, PersistHooks, RecoveryHooks};
use crate::mapping::Dense;

#[derive(Clone, Copy)]
pub(crate) struct Bare;

impl Hooks for Bare {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;
    fn name(&self) -> &'static str {
        "bare"
    }
}
impl GcHooks for Bare {}
impl PersistHooks for Bare {}
impl RecoveryHooks for Bare {}
impl EventHooks for Bare {}
