//! Every name of a plan checked by the one identifier rule (`crate::ident`),
//! right after planning, before any of them reaches generated code.

use crate::error::Result;
use crate::ident::{check_identifier, check_text};
use crate::plan::model::{Entry, Plan};

/// Checks every name of every module of `plan`.
pub(crate) fn check_plan(plan: &Plan) -> Result<()> {
    for module in &plan.modules {
        let m = &module.name;
        check_identifier("module name", m)?;
        for tensor in module.inputs.iter().chain(&module.outputs) {
            check_text(&format!("module `{m}`: tensor name"), &tensor.name)?;
        }
        for pool in &module.pools {
            check_identifier(&format!("module `{m}`: pool name"), &pool.name)?;
        }
        match &module.entry {
            Entry::CInterface(header) => {
                for member in header.inputs.iter().chain(&header.outputs).chain(&header.pools).chain(&header.devices) {
                    check_identifier(&format!("module `{m}`: struct member in {}", header.path), member)?;
                }
            }
            Entry::Graph(schedule) => {
                for call in &schedule.calls {
                    check_identifier(&format!("module `{m}`: operator of graph node {}", call.node), &call.func_name)?;
                }
            }
            Entry::Packed { function, .. } | Entry::Operator { function, .. } => {
                check_identifier(&format!("module `{m}`: function"), function)?
            }
            Entry::LegacyDescriptor { symbol, .. } => check_identifier(&format!("module `{m}`: descriptor"), symbol)?,
        }
    }
    Ok(())
}
