//! The names of a plan checked right after planning, before any of them
//! reaches generated code: identifiers are [`CIdent`](crate::ident::CIdent)s,
//! checked when the plan was made; tensor names are text, checked here; and
//! names that the generated code transforms must stay distinct after it.

use crate::error::Result;
use crate::ident::{check_distinct, check_text, NameTransform, RustIdent};
use crate::plan::model::Plan;

/// How module names are transformed: `pub mod <snake>`, `TVMGEN_<UPPER>_`
/// macros and guards, and `mlf/<module>.rs`-style file names on file systems
/// that ignore case.
const MODULE_TRANSFORMS: &[NameTransform] = &[
    ("Rust module name", |name| RustIdent::snake(name).bare().to_string()),
    ("name when case is ignored (C macros, file names)", |name| name.to_ascii_uppercase()),
];

/// Pool names become `TVMGEN_<M>_<POOL>_...` macros and glue symbols.
const POOL_TRANSFORMS: &[NameTransform] = &[("name when case is ignored", |name| name.to_ascii_uppercase())];

/// Checks the tensor names of every module of `plan`, and that module and
/// pool names stay distinct after the transformations generated code applies.
pub(crate) fn check_plan(plan: &Plan) -> Result<()> {
    check_distinct("module name", plan.modules.iter().map(|module| module.name.as_str()), MODULE_TRANSFORMS)?;
    for module in &plan.modules {
        for tensor in module.inputs.iter().chain(&module.outputs) {
            check_text(&format!("module `{}`: tensor name", module.name), &tensor.name)?;
        }
        check_distinct(
            &format!("module `{}`: pool name", module.name),
            module.pools.iter().map(|pool| pool.name.as_str()),
            POOL_TRANSFORMS,
        )?;
    }
    Ok(())
}
