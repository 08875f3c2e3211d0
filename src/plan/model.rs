//! The plan as data: what every later stage (code generation, the toolchain,
//! reports) reads. A leaf: it decides nothing and imports no stage but the
//! types it carries (the source scanner's, the stack bound's).

use crate::dtype::DType;
use crate::ident::CIdent;
use crate::input::sources::{CodeNeeds, Codegen, InterfaceHeader};
use crate::objects::stack::StackBound;

/// Everything the later stages need to build one archive.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub modules: Vec<ModulePlan>,
    /// The archive carries TVM's standalone C runtime under `runtime/`.
    pub has_runtime: bool,
    /// `crt_config.h` shipped in the archive (path), if any.
    pub crt_config_template: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct ModulePlan {
    /// Module name as TVM wrote it (`default`, `vision`).
    pub name: CIdent,
    pub entry: Entry,
    pub codegen: Codegen,
    pub needs: CodeNeeds,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
    pub pools: Vec<Pool>,
    pub memory: MemoryMap,
    /// Alignment of workspace, arena and pools (`-workspace-byte-alignment`).
    pub alignment: u64,
    /// Bytes of the static arena behind `TVMBackendAllocWorkspace`; 0 when the code needs none.
    pub arena_bytes: u64,
    /// Target strings from the metadata, for documentation.
    pub targets: Vec<String>,
    /// The operator calls a profiled run times, when planned with `PlanOptions::profile` (`plan::profile`).
    pub profile: Option<Profile>,
    /// How an AOT module's run is split into steps (`plan::steps`); `None` for
    /// graph and operator modules, whose steps are their planned calls.
    pub entry_split: Option<Steps>,
    /// The arena group the module's scratch lives in (`Builder::arena_group`), laid out by `ArenaGroup::lay_out`.
    pub arena_group: Option<ArenaGroup>,
}

/// Where a member of an arena group keeps its scratch: consecutive parts of
/// the group's one arena `mlf_arena_<name>`, each at an offset aligned to the
/// module's alignment. Every member lays its parts out from offset 0: members
/// take turns, so their parts may overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArenaGroup {
    pub name: CIdent,
    /// Offset of the graph's storage, when the module has some.
    pub storage: Option<u64>,
    /// Offset of the arena behind `TVMBackendAllocWorkspace`, when the module has one.
    pub arena: Option<u64>,
    /// Offset of each workspace (not constant) pool, by the pool's name.
    pub pools: Vec<(CIdent, u64)>,
    /// USMP's `global_workspace`, which the archive's C defines, moved into the arena.
    pub code_workspace: Option<CodeWorkspace>,
    /// The bytes of the group's arena this member uses: its parts' end.
    pub bytes: u64,
}

/// A workspace the archive's C defines itself (USMP's `global_workspace`),
/// moved into the group's arena by compiling an edited copy of its source
/// (`codegen::redirect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeWorkspace {
    /// The source that defines it (tree path).
    pub file: String,
    /// The definition's line.
    pub line: u32,
    pub bytes: u64,
    /// The alignment its definition asks.
    pub alignment: u64,
    /// Its offset in the group's arena.
    pub offset: u64,
    /// The edits of the source's text that make the copy.
    pub edits: Vec<SourceEdit>,
}

/// One span replacement of a source's text: `expected` at `start..end`
/// becomes `replacement` (`codegen::redirect::apply`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceEdit {
    pub start: usize,
    pub end: usize,
    pub expected: String,
    pub replacement: String,
}

impl ArenaGroup {
    /// The parts of `module`'s scratch laid out one after another, the
    /// workspace its code defines (`(bytes, alignment)`) first; `None` when
    /// the offsets overflow (the limits refuse such sizes first).
    pub fn lay_out(name: CIdent, module: &ModulePlan, code_workspace: Option<(u64, u64)>) -> Option<(ArenaGroup, Option<u64>)> {
        let align = module.alignment.max(1);
        let mut end = 0u64;
        let mut place_at = |bytes: u64, align: u64| -> Option<Option<u64>> {
            if bytes == 0 {
                return Some(None);
            }
            let offset = end.checked_next_multiple_of(align)?;
            end = offset.checked_add(bytes)?;
            Some(Some(offset))
        };
        let workspace = match code_workspace {
            Some((bytes, alignment)) => place_at(bytes, align.max(alignment))?,
            None => None,
        };
        let mut place = |bytes: u64| place_at(bytes, align);
        let storage = place(module.schedule().map_or(0, |s| s.storage_bytes))?;
        let arena = place(module.arena_bytes)?;
        let mut pools = Vec::new();
        for pool in module.pools.iter().filter(|pool| pool.constant_data.is_none()) {
            if let Some(offset) = place(pool.size_bytes)? {
                pools.push((pool.name.clone(), offset));
            }
        }
        Some((ArenaGroup { name, storage, arena, pools, code_workspace: None, bytes: end }, workspace))
    }

    /// Where the member's CMSIS-NN scratch starts in the group's arena: after
    /// the glue's parts, at the module's `alignment`.
    pub fn kernel_scratch_offset(&self, alignment: u64) -> u64 {
        round_up(self.bytes, alignment.max(1))
    }

    /// The bytes of the group's arena the member uses with `kernel_scratch`
    /// bytes of CMSIS-NN scratch after the glue's parts. Saturates instead of
    /// overflowing: `limits` refuses any size that large.
    pub fn member_bytes(&self, alignment: u64, kernel_scratch: u64) -> u64 {
        match kernel_scratch {
            0 => self.bytes,
            bytes => self.kernel_scratch_offset(alignment).saturating_add(bytes),
        }
    }
}

/// The operator calls one run makes, for `Builder::profile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The called operator functions in call order, one per call.
    pub calls: Vec<CIdent>,
    /// Where the order was read, for the generated docs.
    pub source: String,
    /// Functions the archive's C defines that are no operator and whose names
    /// no operator's contains (gcc's exclude list matches substrings): left
    /// uninstrumented, so their calls inside an operator add no hooks to its time.
    pub untimed: Vec<CIdent>,
}

/// One step of a stepped run (`ModulePlan::steps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// The operator (or entry) function the step calls, as `STEP_OPERATORS` names it.
    pub operator: String,
}

/// The name of the one step of a graph without operator calls, which only copies its outputs.
pub(crate) const COPY_STEP: &str = "copy outputs";

/// The static state the step code reads parameters and locals from: a
/// `mlf_` name, which no identifier of a split function may use.
pub(crate) const STATE: &str = "mlf_steps";

/// How a module's run is stepped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Steps {
    /// The model function split at its operator calls.
    Split(Box<Split>),
    /// Run as one step; `why` is the `cargo:warning` text naming the function, file and construct.
    Whole { why: String },
}

/// A model function split at its operator calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    /// One per step, in order: the operator each step calls.
    pub operators: Vec<CIdent>,
    /// Tree path of the source defining the model function: its copy gets the state and the step code.
    pub file: String,
    /// The model function.
    pub function: CIdent,
    /// Its parameter list as written (the recorder's).
    pub params_text: String,
    /// Its parameters, then its top-level locals: the state's members.
    pub state: Vec<StateVar>,
    /// Each step's statements, as written but for names of the state (`mlf_steps.name`) and declarations made assignments.
    pub steps: Vec<String>,
    /// What the function the glue calls becomes.
    pub begin: Begin,
}

/// One member of the step state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateVar {
    pub name: CIdent,
    /// Its declaration, type to dimensions, without `;`.
    pub declaration: String,
    /// A parameter (recorded by `begin`) rather than a local.
    pub parameter: bool,
}

/// The function that starts a stepped run, with the parameters of the one the glue calls today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Begin {
    /// The glue calls the model function itself (`direct_entry`): begin records its arguments.
    Direct,
    /// The glue calls `function` (in `file`), which only passes its arguments on to the
    /// model function: begin is its copy with that call redirected to the recorder.
    Wrapper {
        file: String,
        function: CIdent,
        /// Its parameter list as written.
        params_text: String,
        /// The arguments of its call to the model function, parentheses included, as written.
        arguments: String,
        /// The model function's parameter list as `file` declares it (the recorder's prototype there).
        model_params_text: String,
    },
}

/// How the generated code is called, decided from the files (not the version).
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// `tvmgen_<m>_run(struct inputs*, struct outputs*[, struct workspace_pools*][, struct devices*])`.
    CInterface(InterfaceHeader),
    /// Graph executor: operator calls planned at build time (see `schedule`).
    Graph(Schedule),
    /// `tvmgen_<m>_run(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_code, void* handle)`
    /// defined in `file`, one `DLTensor*` per input then output: TVM >= 0.9 packed API and August 2021 archives.
    Packed { function: CIdent, file: String },
    /// `const tvm_model_t <symbol>` defined in `file` (TVM main-branch builds, May to August 2021).
    LegacyDescriptor { symbol: CIdent, file: String },
    /// A `tvm.build` operator: packed `function` taking its tensors in the order of `args`.
    Operator { function: CIdent, file: String, args: Vec<OperatorSlot> },
}

/// Where one argument of an operator comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperatorSlot {
    Input(usize),
    Output(usize),
}

impl Entry {
    /// What a user calls this kind of archive, for docs and messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Entry::CInterface(_) => "AOT, C interface",
            Entry::Packed { .. } => "AOT, packed API",
            Entry::LegacyDescriptor { .. } => "AOT, legacy tvm_model_t descriptor",
            Entry::Operator { .. } => "operator-only export",
            Entry::Graph(_) => "graph executor, planned at build time",
        }
    }
}

/// What one module needs, in bytes: the numbers behind its generated constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MemoryNeeds {
    /// Constant (weight) bytes in the generated code: `constants_size_bytes` in metadata.json.
    pub constants: u64,
    /// Constant pools the application places in read-only memory (interface header).
    pub constant_pools: u64,
    /// Workspace the metadata reports: `workspace_size_bytes`.
    pub workspace: u64,
    /// Workspace the generated code reserves itself (USMP's static array).
    pub code_workspace: u64,
    /// The static arena mlf-build reserves for `TVMBackendAllocWorkspace`.
    pub arena: u64,
    /// Workspace pools mlf-build reserves.
    pub pools: u64,
    /// Static storage of a graph's intermediate tensors.
    pub storage: u64,
    /// Scratch mlf-build supplies to CMSIS-NN calls that reserve none on a core
    /// whose kernels need some (0 until a build knows the core).
    pub kernel_scratch: u64,
    /// Weights from a graph's `.params` file, placed in read-only memory.
    pub params: u64,
    /// Static RAM TVM's own plan of a graph would take (one slot per storage id
    /// plus an arena for the largest operator workspace), for comparison with
    /// [`MemoryNeeds::static_ram`]; 0 for other modules.
    pub tvm_graph_plan: u64,
    /// Padded copies of inputs and outputs the glue owns, where the code's reach
    /// is an upper bound past the declared size: each the declared size plus its padding.
    pub padded_io: u64,
    /// The static state of a stepped run, which outlives each step: the glue's
    /// buffer pointers, progress and the entry's arguments, and a split AOT
    /// entry's locals between steps, as the compiled objects reserve it
    /// (zero-initialised, so it goes where the workspace goes); 0 until a build
    /// compiled them. A program that never steps drops it at link time.
    pub stepping: u64,
    /// All input buffers together.
    pub inputs: u64,
    /// All output buffers together.
    pub outputs: u64,
    /// For a member of an arena group (`Builder::arena_group`): the bytes of
    /// the group's one arena it uses, its scratch parts above laid out there
    /// (`GROUP_SCRATCH_BYTES`); 0 outside a group. The group counts its arena
    /// once, so [`MemoryNeeds::static_ram`] leaves these parts out.
    pub group_scratch: u64,
    /// Whether the module is a member of an arena group.
    pub in_arena_group: bool,
}

impl MemoryNeeds {
    /// Static RAM a run uses besides the caller's buffers; for a member of an
    /// arena group, its own only: the scratch it keeps in the group's arena
    /// ([`MemoryNeeds::group_scratch`]) is counted once, by the group.
    pub fn static_ram(&self) -> u64 {
        // Each part is at most `limits::MAX_BYTES`; saturating keeps the public API panic-free regardless.
        let own = [self.padded_io, self.stepping].into_iter().fold(0, u64::saturating_add);
        if self.in_arena_group {
            own
        } else {
            own.saturating_add(self.scratch())
        }
    }

    /// The scratch parts, each as the module would hold it alone: what an
    /// arena group's members share.
    pub fn scratch(&self) -> u64 {
        [self.code_workspace, self.arena, self.pools, self.storage, self.kernel_scratch].into_iter().fold(0, u64::saturating_add)
    }

    /// RAM a run needs in all: [`MemoryNeeds::static_ram`] plus one set of input and output buffers.
    pub fn ram(&self) -> u64 {
        [self.static_ram(), self.inputs, self.outputs].into_iter().fold(0, u64::saturating_add)
    }
}

impl ModulePlan {
    /// The fixed call sequence of a graph-executor module.
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.entry {
            Entry::Graph(schedule) => Some(schedule),
            _ => None,
        }
    }

    /// The steps of a stepped run, in order: the one list the glue's
    /// `step_call` runs and the generated `OPERATOR_CALLS` and
    /// `STEP_OPERATORS` describe. A graph steps each planned operator call
    /// (its output copies end the last step; a graph with no call has one step
    /// that only copies); an AOT entry split at its operator calls
    /// (`entry_split`) steps each call; every other module runs its whole
    /// entry function as one step, named after the function it calls.
    pub fn steps(&self) -> Vec<Step> {
        let whole = |function: String| vec![Step { operator: function }];
        if let Some(Steps::Split(split)) = &self.entry_split {
            return split.operators.iter().map(|operator| Step { operator: operator.to_string() }).collect();
        }
        match &self.entry {
            Entry::Graph(schedule) if schedule.calls.is_empty() => whole(COPY_STEP.to_string()),
            Entry::Graph(schedule) => schedule.calls.iter().map(|call| Step { operator: call.func_name.to_string() }).collect(),
            Entry::CInterface(interface) => match &interface.direct_entry {
                Some(function) => whole(function.to_string()),
                None => whole(format!("tvmgen_{}_run", self.name)),
            },
            Entry::Packed { function, .. } | Entry::Operator { function, .. } => whole(function.to_string()),
            Entry::LegacyDescriptor { symbol, .. } => whole(symbol.to_string()),
        }
    }

    /// The inputs and outputs the code runs on padded copies of: `(is_input, tensor)`.
    pub fn padded_tensors(&self) -> impl Iterator<Item = (bool, &Tensor)> {
        let inputs = self.inputs.iter().map(|tensor| (true, tensor));
        inputs.chain(self.outputs.iter().map(|tensor| (false, tensor))).filter(|(_, tensor)| tensor.padding > 0)
    }

    /// `compiled`: what a build for the target found (see [`Compiled`]).
    pub fn memory_needs(&self, compiled: &Compiled) -> MemoryNeeds {
        let schedule = self.schedule();
        // USMP without application pools puts the workspace in a static array of the AOT code;
        // graph operators have none of their own.
        let workspace_in_code = !self.needs.workspace_allocator && self.pools.is_empty() && schedule.is_none();
        MemoryNeeds {
            constants: self.memory.constants_bytes,
            constant_pools: self.pools.iter().filter_map(|p| p.constant_data.as_ref()).map(|d| d.len() as u64).sum(),
            workspace: self.memory.workspace_bytes,
            code_workspace: if workspace_in_code { self.memory.workspace_bytes } else { 0 },
            arena: self.arena_bytes,
            pools: self.pools.iter().filter(|p| p.constant_data.is_none()).map(|p| p.size_bytes).sum(),
            inputs: self.inputs.iter().map(|t| t.size_bytes).sum(),
            outputs: self.outputs.iter().map(|t| t.size_bytes).sum(),
            storage: schedule.map_or(0, |s| s.storage_bytes),
            kernel_scratch: compiled.kernel_scratch_bytes,
            stepping: compiled.stepping_bytes,
            padded_io: self.padded_tensors().map(|(_, tensor)| tensor.buffer_bytes()).fold(0, u64::saturating_add),
            params: schedule.map_or(0, |s| s.params.len() as u64),
            tvm_graph_plan: schedule.map_or(0, |s| s.tvm_plan_bytes),
            group_scratch: self.arena_group.as_ref().map_or(0, |group| group.member_bytes(self.alignment, compiled.kernel_scratch_bytes)),
            in_arena_group: self.arena_group.is_some(),
        }
    }
}

/// What is known of a module only once its C is built for the target: a
/// value the Builder keeps beside the plan, which building does not change.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    /// The worst-case stack of one run.
    pub stack: StackBound,
    /// Static scratch mlf-build supplies to CMSIS-NN calls that reserve none
    /// but need some on the core built for.
    pub kernel_scratch_bytes: u64,
    /// A stepped run's static state, read from the compiled objects' symbols (`builder::measure_stepping`).
    pub stepping_bytes: u64,
}

impl Compiled {
    /// A module whose C is not compiled (planning alone, `inspect` without `--target`).
    pub(crate) fn not_compiled() -> Compiled {
        Compiled { stack: StackBound::not_compiled(), kernel_scratch_bytes: 0, stepping_bytes: 0 }
    }
}

/// Sizes the metadata reports, kept for the generated constants.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryMap {
    pub workspace_bytes: u64,
    pub constants_bytes: u64,
    pub io_bytes: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Tensor {
    /// The name in the interface header (already C-sanitized) or in the graph.
    pub name: String,
    pub dtype: DType,
    pub size_bytes: u64,
    /// The shape when the archive states one (graph, Relay text), else `[elements]`.
    pub shape: Vec<u64>,
    /// Where the size and type came from, for the generated docs.
    pub source: String,
    /// Bytes past `size_bytes` the code may reach (an upper bound, not an
    /// exact reach): the glue runs the code on a buffer of its own this much
    /// larger, copying the caller's `size_bytes` in or out. 0: the caller's buffer is used.
    pub padding: u64,
}

impl Tensor {
    pub fn elements(&self) -> u64 {
        self.size_bytes / self.dtype.size_bytes() as u64
    }

    /// The bytes of the buffer the code runs on: the declared size plus the padding.
    pub fn buffer_bytes(&self) -> u64 {
        self.size_bytes.saturating_add(self.padding)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Pool {
    /// Member name in `struct tvmgen_<m>_workspace_pools`.
    pub name: CIdent,
    pub size_bytes: u64,
    /// Bytes the application must place in a constant pool; `None` for a workspace pool.
    pub constant_data: Option<Vec<u8>>,
}

/// Saturates instead of overflowing: `limits` refuses any size that large.
pub(crate) fn round_up(value: u64, alignment: u64) -> u64 {
    value.div_ceil(alignment).saturating_mul(alignment)
}

/// The fixed run of one graph module.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule {
    /// The distinct tensor descriptions operators are called with.
    pub tensors: Vec<TensorArg>,
    /// Operator calls in graph order.
    pub calls: Vec<Call>,
    /// Outputs whose data lives elsewhere, copied in after the last call.
    pub copies: Vec<CopyOut>,
    /// Regions of the static storage, by offset.
    pub slots: Vec<Slot>,
    /// Bytes of static storage: the end of the last region, aligned.
    pub storage_bytes: u64,
    /// Static RAM TVM's own plan takes: one aligned slot per storage id that
    /// operators write plus an arena for the largest operator workspace.
    pub tvm_plan_bytes: u64,
    /// The weights from `.params`, each at an aligned offset.
    pub params: Vec<u8>,
    /// How many weights are linked into the C code (looked up by storage id).
    pub linked_params: usize,
    /// The C symbol that returns linked weights (`_lookup_linked_param`).
    pub lookup_symbol: Option<CIdent>,
}

/// One `DLTensor` an operator receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorArg {
    /// The entry it describes, for comments.
    pub entry: usize,
    pub place: Place,
    pub dtype: DType,
    /// As the graph gives it, or `[elements]` for operators with `flatten_data`.
    pub shape: Vec<i64>,
}

/// Where a tensor's bytes are at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// The caller's input buffer `n`.
    Input(usize),
    /// The caller's output buffer `n`.
    Output(usize),
    /// Byte offset into the static storage.
    Storage(u64),
    /// Byte offset into the weights.
    Param(u64),
    /// A weight the C code links in, found by its storage id.
    Linked(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub node: usize,
    pub func_name: CIdent,
    /// Indices into `tensors`: inputs then outputs.
    pub args: Vec<usize>,
    /// The region of the storage `TVMBackendAllocWorkspace` serves during
    /// this call, as (offset, bytes); `None` when the operator needs none.
    pub workspace: Option<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CopyOut {
    pub output: usize,
    /// Index into `tensors`.
    pub from: usize,
    pub bytes: u64,
}

/// One region of the static storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slot {
    pub holds: Holds,
    pub offset: u64,
    pub bytes: u64,
    /// The first and last call (index into `calls`) it is live during; one
    /// past the last call stands for the copies into outputs.
    pub live: (usize, usize),
}

/// What a storage region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// The tensor of this entry (and of the `__nop` outputs that alias it).
    Tensor(usize),
    /// The workspace of this call (index into `calls`).
    Workspace(usize),
}
