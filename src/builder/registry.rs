//! What the Builders of one build script share, per output directory: which
//! archive claimed each module and symbol, the `mlf/mod.rs` index of every
//! module built, and the files of modules an archive no longer has.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cargo::cache;
use crate::cargo::write::write_if_changed;
use crate::codegen;
use crate::codegen::ArenaGroups;
use crate::error::{Error, ErrorKind, Result};
use crate::ident::{self, RustIdent};
use crate::plan::fit::{FitModule, Placing};
use crate::plan::model::{Compiled, Entry, MemoryNeeds, Plan};

/// Every module built into each OUT_DIR so far, and whether it implements `mlf_rt::Model`.
static MODULE_INDEX: Mutex<BTreeMap<PathBuf, BTreeMap<String, bool>>> = Mutex::new(BTreeMap::new());

/// A module an earlier Builder of the build script built: what the
/// `memory_x` fit of the later ones counts, since one program links them all.
#[derive(Debug, Clone)]
pub(super) struct BuiltModule {
    name: String,
    needs: MemoryNeeds,
    group: Option<String>,
    placing: Placing,
}

impl BuiltModule {
    pub(super) fn fit_module(&self) -> FitModule<'_> {
        FitModule { name: &self.name, needs: &self.needs, group: self.group.as_deref(), placing: &self.placing }
    }
}

/// Every module each OUT_DIR holds so far, by module name, with its needs as built.
static BUILT_MODULES: Mutex<BTreeMap<PathBuf, BTreeMap<String, BuiltModule>>> = Mutex::new(BTreeMap::new());

/// Records the modules of `plan` as built, with their needs.
pub(super) fn record_built(out_dir: &Path, plan: &Plan, compiled: &[Compiled], placing: &Placing) {
    let mut built = BUILT_MODULES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let built = built.entry(out_dir.to_path_buf()).or_default();
    for (module, compiled) in plan.modules.iter().zip(compiled) {
        let entry = BuiltModule {
            name: module.name.to_string(),
            needs: module.memory_needs(compiled),
            group: module.arena_group.as_ref().map(|group| group.name.to_string()),
            placing: placing.clone(),
        };
        built.insert(module.name.to_string(), entry);
    }
}

/// The modules earlier Builders built into `out_dir`, except those `plan` builds again.
pub(super) fn built_before(out_dir: &Path, plan: &Plan) -> Vec<BuiltModule> {
    let built = BUILT_MODULES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(built) = built.get(out_dir) else { return Vec::new() };
    let rebuilt: Vec<&str> = plan.modules.iter().map(|m| m.name.as_str()).collect();
    built.values().filter(|module| !rebuilt.contains(&module.name.as_str())).cloned().collect()
}

/// The arena groups of the modules built into `out_dir`: group -> member
/// module -> the bytes of the group's arena it uses (its `group_scratch`).
fn arena_groups(out_dir: &Path) -> ArenaGroups {
    let built = BUILT_MODULES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut groups = ArenaGroups::new();
    for module in built.get(out_dir).into_iter().flat_map(BTreeMap::values) {
        if let Some(group) = &module.group {
            groups.entry(group.clone()).or_default().insert(module.name.clone(), module.needs.group_scratch);
        }
    }
    groups
}

/// A placed arena group's definition so far, per OUT_DIR and group: its
/// section, size and alignment (`libraries::group_arena_library`).
static PLACED_ARENAS: Mutex<BTreeMap<(PathBuf, String), PlacedArena>> = Mutex::new(BTreeMap::new());

/// Where and how large a placed group's one arena definition is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlacedArena {
    pub section: String,
    pub bytes: u64,
    pub alignment: u64,
    /// Whether this Builder is the group's first to place it: the one that links its library.
    pub first: bool,
}

/// Grows group `group`'s placed arena to hold `bytes` at `alignment`, in
/// `section`; the group's members must all place it in the same section.
pub(super) fn place_group_arena(out_dir: &Path, group: &str, section: &str, bytes: u64, alignment: u64) -> Result<PlacedArena> {
    let mut placed = PLACED_ARENAS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let key = (out_dir.to_path_buf(), group.to_string());
    let Some(arena) = placed.get_mut(&key) else {
        let arena = PlacedArena { section: section.to_string(), bytes, alignment, first: true };
        placed.insert(key, PlacedArena { first: false, ..arena.clone() });
        return Ok(arena);
    };
    if arena.section != section {
        return Err(Error::new(
            ErrorKind::Config,
            format!("arena group `{group}` has one arena, placed in `{}` by an earlier member's link_section(Storage::Workspace, ..), not `{section}`", arena.section),
        )
        .help("give every member of the group the same workspace section, or none"));
    }
    arena.bytes = arena.bytes.max(bytes);
    arena.alignment = arena.alignment.max(alignment);
    Ok(arena.clone())
}

/// `$OUT_DIR/mlf/mod.rs`: one `pub mod` per module this build script has built,
/// so several archives are included with one line, and one per arena group.
pub(super) fn write_module_index(out_dir: &Path, plan: &Plan, mlf_rt: bool) -> Result<()> {
    let mut index = MODULE_INDEX.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let modules = index.entry(out_dir.to_path_buf()).or_default();
    for module in &plan.modules {
        modules.insert(module.name.to_string(), mlf_rt);
    }
    let groups = arena_groups(out_dir);
    check_group_names(modules, &groups)?;
    let index = codegen::module_index(modules, &groups);
    write_if_changed(&out_dir.join(&index.path), &index.bytes).map(drop)
}

/// `mod.rs` declares `pub mod arena_groups` beside the modules, and a module
/// per group inside it, by their Rust names: those must not clash.
fn check_group_names(modules: &BTreeMap<String, bool>, groups: &ArenaGroups) -> Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    if let Some(module) = modules.keys().find(|name| RustIdent::snake(name).bare() == codegen::ARENA_GROUPS_MODULE) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("module `{module}` would have the name `mod.rs` gives its arena groups, `{}`", codegen::ARENA_GROUPS_MODULE),
        )
        .help(format!("give the module another name: Builder::rename_module(\"{module}\", \"another_name\")")));
    }
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for group in groups.keys() {
        if let Some(other) = seen.insert(RustIdent::snake(group).bare().to_string(), group) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("arena groups `{other}` and `{group}` would have the same Rust name in `mod.rs`"),
            )
            .help("give the groups names that differ in more than case and `_`"));
        }
    }
    Ok(())
}

/// Which archive claimed each module name and unprefixed C symbol, per OUT_DIR:
/// two archives in one build script must not define the same symbols.
static CLAIMS: Mutex<BTreeMap<(PathBuf, String), PathBuf>> = Mutex::new(BTreeMap::new());

pub(super) fn claim_symbols(out_dir: &Path, archive: &Path, plan: &Plan) -> Result<()> {
    let mut claims = CLAIMS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for module in &plan.modules {
        let m = &module.name;
        let mut symbols = vec![(format!("module `{m}`"), None)];
        match &module.entry {
            Entry::Operator { function, .. } => {
                symbols.push((format!("C function `{function}`"), Some(function.to_string())));
                symbols.push(("C function `__tvm_main__`".to_string(), Some("__tvm_main__".to_string())));
            }
            Entry::LegacyDescriptor { symbol, .. } if !symbol.starts_with("tvmgen_") => {
                symbols.push((format!("C descriptor `{symbol}`"), Some(symbol.to_string())));
            }
            _ => {}
        }
        for (what, unprefixed) in symbols {
            let key = (out_dir.to_path_buf(), what.clone());
            match claims.get(&key) {
                Some(other) if other != archive => {
                    let (message, help) = match unprefixed {
                        None => (
                            format!("{what} is also built from `{}` by this build script: both would write `mlf/{m}.rs` and define the C symbols `tvmgen_{m}_*` and `mlf_{m}_*`", other.display()),
                            format!("give one of them another name: Builder::new(\"{}\").rename_module(\"{m}\", \"another_name\")", archive.display()),
                        ),
                        Some(symbol) => (
                            format!("{what} is also defined by `{}`, built by this build script: the two would clash at link time", other.display()),
                            format!("TVM wrote `{symbol}` without a module prefix, so renaming cannot help: only one of the two archives can be linked into a program; build the other into a separate one"),
                        ),
                    };
                    return Err(Error::new(ErrorKind::Config, message).help(help));
                }
                _ => {
                    claims.insert(key, archive.to_path_buf());
                }
            }
        }
    }
    Ok(())
}

/// Removes what an earlier run of this Builder (same archive path and renames)
/// generated for modules the archive no longer has, unless another Builder of
/// this build script generates them now: a stale `mlf/<m>.rs` would fail later, at link time.
pub(super) fn remove_stale_modules(out_dir: &Path, archive: &Path, renames: &[(String, String)], plan: &Plan) -> Result<()> {
    let mlf = out_dir.join("mlf");
    let builder_key = cache::key(&[archive.to_string_lossy().as_bytes(), format!("{renames:?}").as_bytes()]);
    let manifest = mlf.join("manifests").join(format!("{builder_key}.txt"));
    let current: Vec<&str> = plan.modules.iter().map(|m| m.name.as_str()).collect();
    let previous = std::fs::read_to_string(&manifest).unwrap_or_default();
    let claims = CLAIMS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for name in previous.lines().filter(|name| ident::is_c_identifier(name) && !current.contains(name)) {
        if claims.contains_key(&(out_dir.to_path_buf(), format!("module `{name}`"))) {
            continue;
        }
        for file in [mlf.join(format!("{name}.rs")), mlf.join(format!("{name}.json"))] {
            if file.is_file() {
                std::fs::remove_file(&file).map_err(|e| Error::io("remove", &file, e))?;
            }
        }
        let work = mlf.join("build").join(name);
        if work.is_dir() {
            std::fs::remove_dir_all(&work).map_err(|e| Error::io("remove", &work, e))?;
        }
    }
    write_if_changed(&manifest, current.join("\n").as_bytes())?;
    Ok(())
}
