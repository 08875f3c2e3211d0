//! What the Builder knows about each module, as data: tensors, the memory map
//! (from `ModulePlan::memory_needs`, the numbers behind the generated
//! constants) and how the archive was read. `mlf-build inspect` prints it and
//! the Builder writes it as `$OUT_DIR/mlf/<module>.json` (schema in README.md).

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::Result;
use crate::input::kernel_library::{self, KernelLibrary};
use crate::input::user_path::Base;
use crate::json::{json, Value};
use crate::objects::stack::StackBound;
use crate::plan::model::{Compiled, Entry, MemoryNeeds, ModulePlan, Tensor};
use crate::plan::{read_and_plan, PlanOptions, Planned};
use crate::toolchain::target;

/// The `schema` value of every JSON document mlf-build writes about a module;
/// its number changes only when a field changes meaning or goes away.
pub const SCHEMA: &str = "mlf-build/inspect/1";

/// One input or output of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorData {
    /// Name in the interface header or the graph.
    pub name: String,
    /// TVM's element type name (`int8`, `float32`, ...).
    pub dtype: String,
    /// Shape as the archive states it, else `[elements]`.
    pub shape: Vec<u64>,
    /// Size in bytes.
    pub bytes: u64,
    /// Which file of the archive gave the size and type.
    pub source: String,
}

/// Everything mlf-build read and decided about one module.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModuleReport {
    /// Module name (`default` unless the archive was exported with another).
    pub name: String,
    /// The `version` of metadata.json (the build kind is detected from the files, not from it).
    pub mlf_version: u32,
    /// `aot`, `graph` or `none` (an operator export), as the files show.
    pub executor: String,
    /// How the generated code is called: `c`, `packed`, `tvm_model_t`, `operator` or `graph`.
    pub interface: String,
    /// The archive kind in words, as the generated docs say it.
    pub kind: String,
    /// Target strings from metadata.json.
    pub targets: Vec<String>,
    /// Inputs in the model's order.
    pub inputs: Vec<TensorData>,
    /// Outputs in the model's order.
    pub outputs: Vec<TensorData>,
    /// The memory map: the same numbers as the generated constants.
    pub memory: MemoryNeeds,
    /// Alignment of workspace, arena and pools.
    pub alignment: u64,
    /// Facts mlf-build worked out rather than read from the archive.
    pub inferred: Vec<String>,
    /// The worst-case stack of one run (`STACK_BYTES`), known once the C is compiled.
    pub stack: StackBound,
    /// What the module's code needs from outside the archive.
    pub needs: Vec<Need>,
    /// The arena group the module is a member of ([`crate::Builder::arena_group`]):
    /// its scratch is a part of the group's one arena (`memory.group_scratch`
    /// bytes of it), counted once by the group, not in its own static RAM.
    pub arena_group: Option<String>,
}

/// Something a module's code needs that the archive does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Need {
    /// `cmsis-nn` (the kernel library), `header` (another header nobody
    /// supplies) or `arm` (code only an Arm core runs).
    pub kind: String,
    /// What is needed, why, and how to supply it.
    pub what: String,
    /// The archive's file that shows it.
    pub file: String,
    /// What meets it among what the inspection was given (`--cmsis-nn`), in words; `None`: nothing yet.
    pub met_by: Option<String>,
}

/// What `mlf-build inspect` reports on one archive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// One report per module, sorted by name.
    pub modules: Vec<ModuleReport>,
    /// What the Builder would print as `cargo:warning` lines (e.g. a module inferred without metadata.json).
    pub warnings: Vec<String>,
    /// The group's plan, when the archives were inspected as one arena group ([`inspect_arena_group`]).
    pub arena_group: Option<ArenaGroupReport>,
}

/// One member of an inspected arena group: a module and the archive it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupMember {
    /// The archive, as given.
    pub archive: std::path::PathBuf,
    /// The module's report; its scratch in the group's arena is `memory.group_scratch`.
    pub module: ModuleReport,
}

/// Several archives' modules planned as one arena group: the arena they
/// share, the size of the largest member's scratch, counted once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArenaGroupReport {
    /// The group's name.
    pub name: String,
    /// The members, in the order the archives were given.
    pub members: Vec<GroupMember>,
}

impl ArenaGroupReport {
    /// Bytes of the group's one arena: the most any member uses.
    pub fn arena_bytes(&self) -> u64 {
        self.members.iter().map(|m| m.module.memory.group_scratch).max().unwrap_or(0)
    }

    /// The members' scratch were each built apart: the sum of their scratch parts.
    pub fn separate_scratch_bytes(&self) -> u64 {
        self.members.iter().map(|m| m.module.memory.scratch()).fold(0, u64::saturating_add)
    }

    /// Static RAM of the whole group: each member's own, plus the arena once.
    pub fn static_ram(&self) -> u64 {
        self.members.iter().map(|m| m.module.memory.static_ram()).fold(self.arena_bytes(), u64::saturating_add)
    }

    /// RAM of the whole group with every member's input and output buffers.
    pub fn ram(&self) -> u64 {
        self.members.iter().map(|m| m.module.memory.ram()).fold(self.arena_bytes(), u64::saturating_add)
    }

    /// Static RAM the members would take built apart, each with its own scratch.
    pub fn separate_static_ram(&self) -> u64 {
        let apart = |m: &GroupMember| m.module.memory.static_ram().saturating_add(m.module.memory.scratch());
        self.members.iter().map(apart).fold(0, u64::saturating_add)
    }

    /// The group's plan as JSON (`arena_group` in the book's schema).
    pub fn to_json(&self) -> Value {
        let members = self.members.iter().map(|m| {
            json!({
                "archive": m.archive.display().to_string(),
                "module": m.module.name,
                "scratch": m.module.memory.group_scratch,
                "own_static_ram": m.module.memory.static_ram(),
            })
        });
        json!({
            "name": self.name,
            "arena_bytes": self.arena_bytes(),
            "members": members.collect::<Vec<_>>(),
            "static_ram": self.static_ram(),
            "ram": self.ram(),
            "separate_scratch": self.separate_scratch_bytes(),
            "separate_static_ram": self.separate_static_ram(),
        })
    }

    /// The group's plan as `mlf-build inspect --arena-group` prints it.
    pub fn to_text(&self) -> String {
        let mut text = format!("arena group `{}`: {} members take turns in one arena\n", self.name, self.members.len());
        for member in &self.members {
            let m = &member.module;
            text += &format!(
                "  {} module `{}`: scratch {} bytes in the arena, own static RAM {} bytes\n",
                member.archive.display(),
                m.name,
                m.memory.group_scratch,
                m.memory.static_ram()
            );
        }
        text += &format!("  shared arena: {} bytes (the largest member's scratch)\n", self.arena_bytes());
        text += &format!(
            "  static RAM counted once: {} bytes (built apart: {}, scratch {} bytes in all)\n",
            self.static_ram(),
            self.separate_static_ram(),
            self.separate_scratch_bytes()
        );
        text += &format!("  RAM with every member's I/O: {} bytes\n", self.ram());
        text
    }
}

/// Reads and plans an archive without compiling it: what [`crate::Builder::build`]
/// would generate, as data. Needs no build script environment; a relative
/// `path` is taken from the current directory.
///
/// # Errors
/// The Builder's own errors for an archive it cannot build.
pub fn inspect(path: impl AsRef<std::path::Path>) -> Result<Inspection> {
    inspect_with_cmsis_nn(path, None::<&Path>)
}

/// [`inspect`], checking the archive's calls into CMSIS-NN against the
/// CMSIS-NN folder `cmsis_nn` (as [`crate::Builder::cmsis_nn`] takes it):
/// a [`Need`] it meets says so in [`Need::met_by`]. A relative path is taken
/// from the current directory.
///
/// # Errors
/// As [`inspect`]; and a `cmsis_nn` folder that is not CMSIS-NN.
pub fn inspect_with_cmsis_nn(path: impl AsRef<Path>, cmsis_nn: Option<impl AsRef<Path>>) -> Result<Inspection> {
    let library = cmsis_nn_library(cmsis_nn)?;
    let (modules, warnings) = inspect_one(path.as_ref(), library.as_ref(), None)?;
    Ok(Inspection { modules, warnings, arena_group: None })
}

/// The archives' modules planned as members of one arena group `group`, as
/// Builders given [`crate::Builder::arena_group`] would build them: each
/// module's report, and the group's plan (its arena counted once). Paths as
/// [`inspect_with_cmsis_nn`] takes them.
///
/// # Errors
/// As [`inspect`]; a group name that is not a C identifier; a module that cannot join the group.
pub fn inspect_arena_group<P: AsRef<Path>>(group: &str, archives: &[P], cmsis_nn: Option<impl AsRef<Path>>) -> Result<Inspection> {
    let name = crate::builder::arena_group_ident(group)?;
    let library = cmsis_nn_library(cmsis_nn)?;
    let (mut modules, mut warnings, mut members) = (Vec::new(), Vec::new(), Vec::new());
    for archive in archives {
        let (reports, said) = inspect_one(archive.as_ref(), library.as_ref(), Some(&name))?;
        members.extend(reports.iter().map(|module| GroupMember { archive: archive.as_ref().to_path_buf(), module: module.clone() }));
        modules.extend(reports);
        warnings.extend(said);
    }
    Ok(Inspection { modules, warnings, arena_group: Some(ArenaGroupReport { name: name.to_string(), members }) })
}

fn cmsis_nn_library(cmsis_nn: Option<impl AsRef<Path>>) -> Result<Option<KernelLibrary>> {
    match cmsis_nn {
        Some(dir) => Ok(Some(KernelLibrary::read_cmsis_nn(&Base::current_dir().dir(dir.as_ref(), "the CMSIS-NN folder given")?)?)),
        None => Ok(None),
    }
}

/// One archive's module reports and warnings, its modules in `group` when given.
fn inspect_one(
    path: &Path,
    library: Option<&KernelLibrary>,
    group: Option<&crate::ident::CIdent>,
) -> Result<(Vec<ModuleReport>, Vec<String>)> {
    let path = &Base::current_dir().archive(path, "the archive path")?;
    let read = || -> Result<(Vec<ModuleReport>, Vec<String>)> {
        let Planned { tree, metadata, mut plan, warnings } = read_and_plan(path, &PlanOptions::default())?;
        if let Some(group) = group {
            crate::builder::join_arena_group(&mut plan, group, &tree)?;
        }
        let reports = plan.modules.iter().map(|m| ModuleReport::new(m, &Compiled::not_compiled(), metadata.version, library)).collect();
        Ok((reports, warnings))
    };
    read().map_err(|error| error.in_archive(path))
}

/// `a, b, c` (at most eight names, then how many more).
pub(crate) fn listed(names: &[&str]) -> String {
    const SHOWN: usize = 8;
    let mut text = names.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// What `module`'s code needs from outside the archive; a CMSIS-NN need is
/// met by `cmsis_nn` when it defines every kernel the code calls.
fn needs(module: &ModulePlan, cmsis_nn: Option<&KernelLibrary>) -> Vec<Need> {
    let mut needs = Vec::new();
    let code = &module.needs;
    if let Some(calls) = &code.cmsis_nn {
        let kernels = kernel_library::kernels_among(calls.undefined.keys());
        let called = if kernels.is_empty() {
            String::new()
        } else {
            format!(" and calls {} of its functions ({})", kernels.len(), listed(&kernels))
        };
        let mut what = format!(
            "CMSIS-NN: the code includes <{}>{called}; give the folder holding its Include/ and Source/ with Builder::cmsis_nn(dir), CMSIS_NN_PATH or `inspect --cmsis-nn DIR` (TVM 0.14-0.18 used v4.1.0)",
            calls.header
        );
        let mut met_by = None;
        if let Some(library) = cmsis_nn {
            let undefined: BTreeSet<String> = calls.undefined.keys().cloned().collect();
            let missing = library.select(&undefined).missing(&kernels);
            let given = format!("{} ({})", library.root.display(), library.version.as_deref().unwrap_or("revision unknown"));
            if missing.is_empty() {
                met_by = Some(format!("CMSIS-NN at {given}, which defines every function called"));
            } else {
                what = format!("CMSIS-NN: the code calls {}, which CMSIS-NN at {given} does not define: give the release the archive was compiled against", listed(&missing));
            }
        }
        needs.push(Need { kind: "cmsis-nn".to_string(), what, file: calls.file.clone(), met_by });
    }
    for (header, file) in &code.unshipped_headers {
        if crate::own_code::supplies_header(header) {
            continue;
        }
        needs.push(Need {
            kind: "header".to_string(),
            what: format!("<{}>: included but not in the archive; add its directory with Builder::include_dir(..) and its library's sources with Builder::source(..)", crate::error::printable(header)),
            file: file.clone(),
            met_by: None,
        });
    }
    let mcpu = module.targets.iter().flat_map(|t| t.split_whitespace()).find_map(|option| option.strip_prefix("-mcpu="));
    let arm = [
        mcpu.filter(|core| target::arm_core(core).is_some()).map(|core| {
            (
                format!("on an Arm target, a core that runs `{core}` code: the target string says `-mcpu={core}`"),
                "metadata.json".to_string(),
            )
        }),
        code.arm_only
            .as_ref()
            .map(|(file, header)| (format!("an Arm target: the code includes <{header}>, which only Arm toolchains have"), file.clone())),
        code.dsp.as_ref().map(|(file, intrinsic)| {
            (format!("an Arm core with the DSP extension (Cortex-M4, M7, M33, M55): the code uses `{intrinsic}`"), file.clone())
        }),
        code.mve
            .as_ref()
            .map(|(file, header)| (format!("an Arm core with Helium (Cortex-M55): the code includes <{header}>"), file.clone())),
    ];
    needs.extend(arm.into_iter().flatten().map(|(what, file)| Need { kind: "arm".to_string(), what, file, met_by: None }));
    needs
}

impl TensorData {
    fn new(tensor: &Tensor) -> TensorData {
        TensorData {
            name: tensor.name.clone(),
            dtype: tensor.dtype.to_string(),
            shape: tensor.shape.clone(),
            bytes: tensor.size_bytes,
            source: tensor.source.clone(),
        }
    }

    fn json(&self) -> Value {
        json!({ "name": self.name, "dtype": self.dtype, "shape": self.shape, "bytes": self.bytes, "source": self.source })
    }
}

impl ModuleReport {
    /// `compiled`: what the module's compiled code showed, or `Compiled::not_compiled`.
    pub(crate) fn new(module: &ModulePlan, compiled: &Compiled, mlf_version: u32, cmsis_nn: Option<&KernelLibrary>) -> ModuleReport {
        let (executor, interface) = match &module.entry {
            Entry::CInterface(_) => ("aot", "c"),
            Entry::Packed { .. } => ("aot", "packed"),
            Entry::LegacyDescriptor { .. } => ("aot", "tvm_model_t"),
            Entry::Operator { .. } => ("none", "operator"),
            Entry::Graph(_) => ("graph", "graph"),
        };
        let memory = module.memory_needs(compiled);
        let mut inferred = Vec::new();
        for tensor in module.inputs.iter().chain(&module.outputs) {
            if tensor.shape == [tensor.elements()] {
                inferred.push(format!("shape of `{}`: [{}] (element count; no other shape stated)", tensor.name, tensor.elements()));
            }
        }
        if !module.targets.iter().any(|t| t.contains("-workspace-byte-alignment=")) {
            inferred.push(format!("alignment {}: TVM's default, no -workspace-byte-alignment in the target", module.alignment));
        }
        if memory.arena > 0 {
            inferred.push(format!("arena {} bytes: workspace rounded up to the alignment, plus one alignment", memory.arena));
        }
        if memory.kernel_scratch > 0 {
            inferred.push(format!(
                "CMSIS-NN scratch {} bytes: the most one of the calls that reserve none needs on the core built for",
                memory.kernel_scratch
            ));
        }
        for (_, tensor) in module.padded_tensors() {
            inferred.push(format!(
                "`{}` padded by {} bytes: the code reaches at most {} bytes of it (an upper bound), so it runs on a copy; the tensor stays {} bytes",
                tensor.name,
                tensor.padding,
                tensor.buffer_bytes(),
                tensor.size_bytes
            ));
        }
        if memory.code_workspace > 0 {
            inferred.push("workspace is a static array of the generated code (USMP without application pools)".to_string());
        }
        ModuleReport {
            name: module.name.to_string(),
            mlf_version,
            executor: executor.to_string(),
            interface: interface.to_string(),
            kind: module.entry.kind().to_string(),
            targets: module.targets.clone(),
            inputs: module.inputs.iter().map(TensorData::new).collect(),
            outputs: module.outputs.iter().map(TensorData::new).collect(),
            memory,
            alignment: module.alignment,
            inferred,
            stack: compiled.stack.clone(),
            needs: needs(module, cmsis_nn),
            arena_group: module.arena_group.as_ref().map(|group| group.name.to_string()),
        }
    }

    /// The module as JSON (schema [`SCHEMA`], documented in README.md).
    pub fn to_json(&self) -> Value {
        let m = &self.memory;
        json!({
            "schema": SCHEMA,
            "name": self.name,
            "mlf_version": self.mlf_version,
            "executor": self.executor,
            "interface": self.interface,
            "kind": self.kind,
            "targets": self.targets,
            "inputs": self.inputs.iter().map(TensorData::json).collect::<Vec<_>>(),
            "outputs": self.outputs.iter().map(TensorData::json).collect::<Vec<_>>(),
            "memory": {
                "alignment": self.alignment,
                "constants": m.constants,
                "constant_pools": m.constant_pools,
                "params": m.params,
                "workspace": m.workspace,
                "code_workspace": m.code_workspace,
                "arena": m.arena,
                "pools": m.pools,
                "storage": m.storage,
                "kernel_scratch": m.kernel_scratch,
                "padded_io": m.padded_io,
                "stepping": m.stepping,
                "group_scratch": m.group_scratch,
                "inputs": m.inputs,
                "outputs": m.outputs,
                "static_ram": m.static_ram(),
                "ram": m.ram(),
            },
            "inferred": self.inferred,
            "stack_bytes": self.stack.bytes,
            "stack_unknown": self.stack.unknown,
            "stack_path": self.stack.path.iter().map(|step| json!({ "function": step.function, "bytes": step.bytes })).collect::<Vec<_>>(),
            "needs": self.needs.iter().map(|need| json!({ "kind": need.kind, "what": need.what, "file": need.file, "met_by": need.met_by })).collect::<Vec<_>>(),
            "arena_group": self.arena_group,
        })
    }

    /// The human-readable report `mlf-build inspect` prints.
    pub fn to_text(&self) -> String {
        let m = &self.memory;
        let mut text = format!(
            "module `{}`: {} (executor {}, interface {}), metadata.json version {}\n",
            self.name, self.kind, self.executor, self.interface, self.mlf_version
        );
        for target in &self.targets {
            text += &format!("  target: {target}\n");
        }
        for (what, tensors) in [("input", &self.inputs), ("output", &self.outputs)] {
            for (index, t) in tensors.iter().enumerate() {
                text += &format!("  {what} {index} `{}`: {} {:?}, {} bytes (from {})\n", t.name, t.dtype, t.shape, t.bytes, t.source);
            }
        }
        text += &format!("  memory (bytes, alignment {}):\n", self.alignment);
        let rows = [
            ("constants (weights in code, flash)", m.constants),
            ("constant pools (flash)", m.constant_pools),
            ("graph params (flash)", m.params),
            ("workspace (metadata)", m.workspace),
            ("workspace in code (RAM)", m.code_workspace),
            ("arena (RAM)", m.arena),
            ("workspace pools (RAM)", m.pools),
            ("graph storage (RAM)", m.storage),
            ("CMSIS-NN scratch supplied (RAM)", m.kernel_scratch),
            ("padded inputs and outputs (RAM)", m.padded_io),
            ("stepped run's state (RAM)", m.stepping),
            ("inputs", m.inputs),
            ("outputs", m.outputs),
            ("static RAM", m.static_ram()),
            ("RAM with I/O", m.ram()),
        ];
        for (label, bytes) in rows {
            text += &format!("    {label:<36} {bytes:>10}\n");
        }
        if let Some(group) = &self.arena_group {
            text += &format!(
                "  arena group `{group}`: its scratch takes {} bytes of the group's one arena, counted once by the group, not in its static RAM\n",
                m.group_scratch
            );
        }
        match (self.stack.bytes, &self.stack.unknown) {
            (Some(bytes), _) => text += &format!("  stack: {bytes} bytes at most; deepest: {}\n", self.stack.path_text()),
            (None, why) => text += &format!("  stack: unknown ({})\n", why.as_deref().unwrap_or_default()),
        }
        for fact in &self.inferred {
            text += &format!("  inferred: {fact}\n");
        }
        for need in &self.needs {
            match &need.met_by {
                None => text += &format!("  needs {} (from {})\n", need.what, need.file),
                Some(given) => text += &format!("  uses {given} (the code includes it in {})\n", need.file),
            }
        }
        text
    }
}

/// One labelled part of a memory bar.
struct Segment {
    label: &'static str,
    bytes: u64,
    color: &'static str,
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

impl ModuleReport {
    /// A memory-map picture: one bar for flash and one for RAM, a segment per
    /// part with its bytes and each bar's total above it; with `footprint`,
    /// the model's code and all of mlf-build's support library (code and data
    /// in flash, data and bss in RAM) as measured;
    /// with `fit`, one bar per `memory.x` region, its length to scale, showing
    /// what the model takes and the headroom left.
    pub fn to_svg(&self, footprint: Option<&crate::Footprint>, fit: Option<&crate::MemoryFit>) -> String {
        let m = &self.memory;
        let mut flash = vec![
            Segment { label: "weights in code", bytes: m.constants, color: "#4e79a7" },
            Segment { label: "constant pools", bytes: m.constant_pools, color: "#76b7b2" },
            Segment { label: "graph params", bytes: m.params, color: "#59a14f" },
        ];
        if let Some(footprint) = footprint {
            flash.push(Segment { label: "model code (objects)", bytes: footprint.model.text, color: "#edc948" });
            flash.push(Segment { label: "mlf-build support code", bytes: footprint.support.text, color: "#b07aa1" });
            let support_data = footprint.support.rodata.saturating_add(footprint.support.data);
            flash.push(Segment { label: "mlf-build support data", bytes: support_data, color: "#d4a6c8" });
        }
        let mut ram = vec![
            Segment { label: "workspace in code", bytes: m.code_workspace, color: "#e15759" },
            Segment { label: "arena", bytes: m.arena, color: "#f28e2b" },
            Segment { label: "workspace pools", bytes: m.pools, color: "#ff9da7" },
            Segment { label: "graph storage", bytes: m.storage, color: "#9c755f" },
            Segment { label: "CMSIS-NN scratch", bytes: m.kernel_scratch, color: "#d37295" },
            Segment { label: "padded inputs and outputs", bytes: m.padded_io, color: "#a0cbe8" },
            Segment { label: "stepped run's state", bytes: m.stepping, color: "#79706e" },
            Segment { label: "inputs", bytes: m.inputs, color: "#bab0ac" },
            Segment { label: "outputs", bytes: m.outputs, color: "#8cd17d" },
        ];
        if let Some(footprint) = footprint {
            ram.push(Segment { label: "mlf-build support RAM", bytes: footprint.support.ram(), color: "#b07aa1" });
        }
        let bars = [("flash", flash), ("RAM", ram)];
        let scale_max = bars.iter().map(|(_, s)| s.iter().map(|s| s.bytes).sum::<u64>()).max().unwrap_or(0).max(1);
        let (left, bar_width, bar_height, line) = (20.0_f64, 680.0_f64, 28.0_f64, 18.0_f64);
        let mut body = String::new();
        let mut y = 50.0;
        for (memory, segments) in &bars {
            let shown: Vec<&Segment> = segments.iter().filter(|s| s.bytes > 0).collect();
            let total: u64 = shown.iter().map(|s| s.bytes).sum();
            body += &format!(
                "<text x=\"{left}\" y=\"{}\" font-weight=\"bold\" class=\"memory\" data-bytes=\"{total}\">{memory}: {total} bytes</text>\n",
                y - 6.0
            );
            let mut x = left;
            for segment in &shown {
                let width = bar_width * segment.bytes as f64 / scale_max as f64;
                body += &format!(
                    "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{bar_height}\" fill=\"{}\" stroke=\"#333\" stroke-width=\"0.5\"><title>{}: {} bytes</title></rect>\n",
                    segment.color, segment.label, segment.bytes
                );
                x += width;
            }
            body += &format!("<rect x=\"{left}\" y=\"{y}\" width=\"{bar_width}\" height=\"{bar_height}\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>\n");
            y += bar_height + line;
            for segment in &shown {
                body += &format!(
                    "<rect x=\"{left}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\" class=\"segment\" data-memory=\"{memory}\" data-bytes=\"{}\">{}: {} bytes</text>\n",
                    y - 11.0,
                    segment.color,
                    left + 18.0,
                    segment.bytes,
                    segment.label,
                    segment.bytes
                );
                y += line;
            }
            y += 30.0;
        }
        for region in fit.iter().flat_map(|fit| &fit.regions) {
            let (used, length) = (region.used(), region.length.max(1));
            let verdict = if region.fits() { format!("{} bytes left", region.headroom()) } else { "DOES NOT FIT".to_string() };
            body += &format!(
                "<text x=\"{left}\" y=\"{}\" font-weight=\"bold\" class=\"region\" data-used=\"{used}\" data-length=\"{}\">region {}: {used} of {} bytes, {verdict}</text>\n",
                y - 6.0,
                region.length,
                xml_escape(&region.region),
                region.length
            );
            let mut x = left;
            for part in &region.parts {
                // Past the region's end the bar is cut at the frame: the verdict says by how much.
                let width = (bar_width * part.bytes as f64 / length as f64).min(left + bar_width - x).max(0.0);
                let owner = part.module.as_deref().map_or_else(String::new, |m| format!("{} ", xml_escape(m)));
                body += &format!(
                    "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{bar_height}\" fill=\"{}\" stroke=\"#333\" stroke-width=\"0.5\"><title>{owner}{}: {} bytes</title></rect>\n",
                    if region.fits() { "#4e79a7" } else { "#e15759" },
                    part.what,
                    part.bytes
                );
                x += width;
            }
            body += &format!(
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{bar_height}\" fill=\"#eeeeee\" stroke=\"#999\"><title>headroom: {} bytes</title></rect>\n",
                (left + bar_width - x).max(0.0),
                region.headroom()
            );
            y += bar_height + line + 30.0;
        }
        let height = y;
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"{height}\" viewBox=\"0 0 720 {height}\" font-family=\"sans-serif\" font-size=\"13\">\n\
             <rect width=\"720\" height=\"{height}\" fill=\"white\"/>\n\
             <text x=\"{left}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">module `{}`: memory map (bars to one scale; mlf-build {})</text>\n{body}</svg>\n",
            xml_escape(&self.name),
            env!("CARGO_PKG_VERSION")
        )
    }
}
