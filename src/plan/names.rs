//! The names of a plan checked right after planning, before any of them
//! reaches generated code: identifiers are [`CIdent`](crate::ident::CIdent)s,
//! checked when the plan was made; tensor names are text, checked here.

use crate::error::Result;
use crate::ident::check_text;
use crate::plan::model::Plan;

/// Checks the tensor names of every module of `plan`.
pub(crate) fn check_plan(plan: &Plan) -> Result<()> {
    for module in &plan.modules {
        for tensor in module.inputs.iter().chain(&module.outputs) {
            check_text(&format!("module `{}`: tensor name", module.name), &tensor.name)?;
        }
    }
    Ok(())
}
