//! Whether the model fits the memory regions of a `memory.x`: each part of
//! its memory map is counted against the region the linker script sends it
//! to. Counts what the model adds, never the application's own data.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::input::memory_x::{self, MemoryLayout, Placement, Region};
use crate::input::user_path::{self, Base};
use crate::objects::sections::{SectionNames, Storage};
use crate::plan::model::MemoryNeeds;
use crate::plan::report::ModuleReport;

/// One part of the model counted in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FitPart {
    /// The module it belongs to; `None` for code, measured for the whole
    /// library, and for an arena group's shared arena.
    pub module: Option<String>,
    /// The arena group whose one arena this part is (`what` is `shared arena`),
    /// counted once at its largest member's scratch; `None` for other parts.
    pub group: Option<String>,
    /// What it is: `workspace`, `arena`, `inputs`, `constants`, `code`, …
    pub what: &'static str,
    /// Its size.
    pub bytes: u64,
}

/// How much of one `memory.x` region the model takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegionFit {
    /// The region's name in `memory.x`.
    pub region: String,
    /// Its `ORIGIN`.
    pub origin: u64,
    /// Its `LENGTH` in bytes.
    pub length: u64,
    /// The line of `memory.x` that declares it.
    pub line: usize,
    /// What the model puts there.
    pub parts: Vec<FitPart>,
}

impl RegionFit {
    /// Bytes the model takes in the region.
    pub fn used(&self) -> u64 {
        self.parts.iter().map(|part| part.bytes).fold(0, u64::saturating_add)
    }

    /// Whether the model fits in the region.
    pub fn fits(&self) -> bool {
        self.used() <= self.length
    }

    /// Bytes left for the application (0 when the model does not fit).
    pub fn headroom(&self) -> u64 {
        self.length.saturating_sub(self.used())
    }
}

/// The model's memory map laid onto the regions of a `memory.x`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryFit {
    /// The `memory.x` read.
    pub memory_x: PathBuf,
    /// Every region the model uses, in the file's order.
    pub regions: Vec<RegionFit>,
    /// Placements the script leaves to the linker (a section no `SECTIONS` entry takes).
    pub warnings: Vec<String>,
    /// Whether the model's code was measured and counted (a build), or not (planning only).
    pub code_counted: bool,
}

/// Where the model's memory goes: the sections of [`crate::Builder::link_section`]
/// and whether the application places the I/O buffers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Placing {
    pub sections: SectionNames,
    pub app_places_io_buffers: bool,
}

/// Reads `memory_x` and lays the modules' memory maps onto its regions, as a
/// build with the same options would: `sections` as [`crate::Builder::link_section`]
/// gives them, I/O buffers counted in RAM unless `app_places_io_buffers`, and
/// `code_bytes` (the compiled code, e.g. from [`crate::Footprint`]) in FLASH when given.
/// A relative `memory_x` is taken from the current directory.
///
/// # Errors
/// When the file cannot be read or parsed, or has no region for a part (no `RAM`
/// or `FLASH`); a model that does not fit is not an error here ([`MemoryFit::check`]).
pub fn memory_fit(
    memory_x: impl AsRef<Path>,
    modules: &[ModuleReport],
    sections: &[(Storage, String)],
    app_places_io_buffers: bool,
    code_bytes: Option<u64>,
) -> Result<MemoryFit> {
    let memory_x = &Base::current_dir().file(memory_x.as_ref(), "the memory.x path")?;
    let mut placing = Placing { app_places_io_buffers, ..Placing::default() };
    for (storage, section) in sections {
        placing.sections.set(*storage, section)?;
    }
    let layout = read(memory_x)?;
    let modules: Vec<FitModule> =
        modules.iter().map(|m| FitModule { name: &m.name, needs: &m.memory, group: m.arena_group.as_deref(), placing: &placing }).collect();
    fit(memory_x, &layout, &modules, code_bytes)
}

/// One module as [`fit`] counts it: what it needs, the arena group it is a
/// member of, and where its Builder places its memory.
pub(crate) struct FitModule<'a> {
    pub name: &'a str,
    pub needs: &'a MemoryNeeds,
    pub group: Option<&'a str>,
    pub placing: &'a Placing,
}

/// Reads and parses a `memory.x`; errors name the file.
pub(crate) fn read(path: &Path) -> Result<MemoryLayout> {
    let bytes = user_path::read_regular(path, memory_x::MAX_BYTES, "a memory.x")?;
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::new(ErrorKind::Config, "is not UTF-8 text")
            .in_file(path.display().to_string())
            .help("memory.x is a GNU ld script: plain text")
    })?;
    memory_x::parse(&text).map_err(|error| error.in_file(path.display().to_string()))
}

/// Which memory a part goes to, before a region is known.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Memory {
    Ram,
    Flash,
}

/// Lays the modules' memory onto `layout`'s regions. The scratch of an
/// arena group's members is counted once, as the group's arena: the most
/// any member uses, in the region its first member's workspace goes to.
pub(crate) fn fit(memory_x: &Path, layout: &MemoryLayout, modules: &[FitModule], code_bytes: Option<u64>) -> Result<MemoryFit> {
    let mut fit =
        MemoryFit { memory_x: memory_x.to_path_buf(), regions: Vec::new(), warnings: Vec::new(), code_counted: code_bytes.is_some() };
    let mut groups: BTreeMap<&str, (u64, &Region)> = BTreeMap::new();
    for FitModule { name, needs, group, placing } in modules {
        let workspace = place(&mut fit, layout, placing.sections.workspace.as_deref(), Memory::Ram, Storage::Workspace)?;
        let constants = place(&mut fit, layout, placing.sections.constants.as_deref(), Memory::Flash, Storage::Constants)?;
        let module = Some(name.to_string());
        let mut add = |region: &Region, what: &'static str, bytes: u64| {
            if bytes > 0 {
                region_fit(&mut fit.regions, region).parts.push(FitPart { module: module.clone(), group: None, what, bytes });
            }
        };
        let scratch = [
            ("workspace", needs.code_workspace),
            ("arena", needs.arena),
            ("workspace pools", needs.pools),
            ("graph storage", needs.storage),
            ("CMSIS-NN scratch", needs.kernel_scratch),
        ];
        match group {
            Some(group) => {
                let (largest, _) = groups.entry(group).or_insert((0, workspace));
                *largest = (*largest).max(needs.group_scratch);
            }
            None => scratch.into_iter().for_each(|(what, bytes)| add(workspace, what, bytes)),
        }
        for (what, bytes) in [
            ("padded inputs and outputs", needs.padded_io),
            // Zero-initialised statics of the glue and the split copy: `.bss`, which moves with the workspace.
            ("stepped run's state", needs.stepping),
        ] {
            add(workspace, what, bytes);
        }
        if !placing.app_places_io_buffers {
            let ram = default_region(layout, Memory::Ram, "the input and output buffers")?;
            add(ram, "inputs", needs.inputs);
            add(ram, "outputs", needs.outputs);
        }
        for (what, bytes) in [("constants", needs.constants), ("constant pools", needs.constant_pools), ("graph params", needs.params)] {
            add(constants, what, bytes);
        }
    }
    for (group, (bytes, region)) in groups.into_iter().filter(|(_, (bytes, _))| *bytes > 0) {
        let part = FitPart { module: None, group: Some(group.to_string()), what: "shared arena", bytes };
        region_fit(&mut fit.regions, region).parts.push(part);
    }
    if let Some(code) = code_bytes.filter(|&bytes| bytes > 0) {
        let flash = default_region(layout, Memory::Flash, "the model's code")?;
        region_fit(&mut fit.regions, flash).parts.push(FitPart { module: None, group: None, what: "code", bytes: code });
    }
    fit.regions.sort_by_key(|region| region.line);
    Ok(fit)
}

/// The entry of `region` in `regions`, added empty when it has none yet.
fn region_fit<'f>(regions: &'f mut Vec<RegionFit>, region: &Region) -> &'f mut RegionFit {
    let at = match regions.iter().position(|r| r.region == region.name) {
        Some(at) => at,
        None => {
            regions.push(RegionFit {
                region: region.name.clone(),
                origin: region.origin,
                length: region.length,
                line: region.line,
                parts: Vec::new(),
            });
            regions.len() - 1
        }
    };
    &mut regions[at]
}

/// Parts that hold read-only data or code (flash), as [`fit`] names them; the others are RAM.
const READ_ONLY_PARTS: &[&str] = &["constants", "constant pools", "graph params", "code"];

/// The region `storage` goes to: its section's, when the script places it, else RAM or FLASH.
fn place<'l>(fit: &mut MemoryFit, layout: &'l MemoryLayout, section: Option<&str>, memory: Memory, storage: Storage) -> Result<&'l Region> {
    let what = match storage {
        Storage::Workspace => "the model's workspace",
        Storage::Constants => "the model's constants",
    };
    let Some(section) = section else { return default_region(layout, memory, what) };
    let fallback = default_region(layout, memory, what)?;
    let file = fit.memory_x.display();
    let warning = match layout.placement(section) {
        Placement::Region(region) => return Ok(region),
        Placement::Unplaced { line } => format!(
            "{file} line {line}: the output section taking `{section}` names no region (`> REGION`); {what} is counted in `{}`",
            fallback.name
        ),
        Placement::NotTaken => format!(
            "{file}: no SECTIONS entry takes `{section}` (e.g. `SECTIONS {{ {section} (NOLOAD) : {{ *({section} {section}.*) }} > REGION }} INSERT AFTER .bss;`): the linker places it as an orphan; {what} is counted in `{}`",
            fallback.name
        ),
    };
    // Said once, however many modules place their memory there.
    if !fit.warnings.contains(&warning) {
        fit.warnings.push(warning);
    }
    Ok(fallback)
}

/// RAM (`RAM`, else the `REGION_BSS` alias riscv-rt uses) or FLASH (`FLASH`, else `REGION_RODATA`).
fn default_region<'l>(layout: &'l MemoryLayout, memory: Memory, what: &str) -> Result<&'l Region> {
    let (name, alias) = match memory {
        Memory::Ram => ("RAM", "REGION_BSS"),
        Memory::Flash => ("FLASH", "REGION_RODATA"),
    };
    layout.region(name).or_else(|| layout.region(alias)).ok_or_else(|| {
        Error::new(ErrorKind::Config, format!("memory.x has no region `{name}` (nor a `{alias}` alias) for {what}")).help(format!(
            "name the region {name} as cortex-m-rt expects, add REGION_ALIAS(\"{alias}\", <region>), or place it in a section of your own with Builder::link_section"
        ))
    })
}

impl MemoryFit {
    /// An error for the first region the model overfills, saying what it
    /// holds there and what to do.
    ///
    /// # Errors
    /// [`ErrorKind::DoesNotFit`] when a region is too small.
    pub fn check(&self) -> Result<()> {
        let Some(region) = self.regions.iter().find(|region| !region.fits()) else { return Ok(()) };
        let mut modules: Vec<&str> = region.parts.iter().filter_map(|part| part.module.as_deref()).collect();
        modules.sort_unstable();
        modules.dedup();
        let who = match modules.as_slice() {
            [one] => format!("model `{one}` needs"),
            _ => "the models need".to_string(),
        };
        let mut parts = String::new();
        for (index, part) in region.parts.iter().enumerate() {
            let separator = if index == 0 { "" } else { " + " };
            let owner = match (&part.module, &part.group, modules.len()) {
                (_, Some(group), _) => format!("arena group `{group}` "),
                (Some(module), _, 2..) => format!("`{module}` "),
                _ => String::new(),
            };
            let _ = write!(parts, "{separator}{owner}{} {}", part.what, grouped(part.bytes));
        }
        let message = format!(
            "{who} {} B of {} `{}` ({parts}), but {} line {} gives it {} B; this counts only what the model adds, not the application's own data{}",
            grouped(region.used()),
            if region.parts.iter().any(|p| READ_ONLY_PARTS.contains(&p.what)) {
                "read-only memory in region"
            } else {
                "RAM in region"
            },
            region.region,
            self.memory_x.display(),
            region.line,
            grouped(region.length),
            if self.code_counted { "" } else { " (the model's code is not counted: it is not compiled yet)" },
        );
        let holds_ram = region.parts.iter().any(|p| !READ_ONLY_PARTS.contains(&p.what));
        let help = if holds_ram {
            "use a part with a larger RAM region, move the workspace to another bank with Builder::link_section(Storage::Workspace, \".sram2\") and a SECTIONS entry in memory.x that places `.sram2`, or place the input and output buffers yourself and say so with Builder::app_places_io_buffers(true)"
        } else {
            "use a part with more flash, move the weights to another region with Builder::link_section(Storage::Constants, \".ext_flash\") and a SECTIONS entry in memory.x that places it, or make the code smaller with opt-level = \"s\" or \"z\" in the Cargo profile (the C is compiled at Cargo's OPT_LEVEL)"
        };
        Err(Error::new(ErrorKind::DoesNotFit, message).help(help))
    }

    /// One line per region: what the model takes of it and what is left.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "memory fit in {} ({}; the application's own data, stack and heap come on top):\n",
            self.memory_x.display(),
            if self.code_counted { "code measured" } else { "code not counted: give --target to compile and measure it" }
        );
        let modules: BTreeSet<&str> = self.regions.iter().flat_map(|r| &r.parts).filter_map(|p| p.module.as_deref()).collect();
        for region in &self.regions {
            let parts: Vec<String> = region
                .parts
                .iter()
                .map(|part| match (&part.module, &part.group) {
                    (_, Some(group)) => format!("arena group {group} {} {}", part.what, grouped(part.bytes)),
                    (Some(module), _) if modules.len() > 1 => format!("{module} {} {}", part.what, grouped(part.bytes)),
                    _ => format!("{} {}", part.what, grouped(part.bytes)),
                })
                .collect();
            let verdict = if region.fits() {
                format!("fits, {} B left", grouped(region.headroom()))
            } else {
                format!("DOES NOT FIT by {} B", grouped(region.used() - region.length))
            };
            let _ = writeln!(
                text,
                "  {:<10} {:>12} of {:>12} B ({:.1}%): {verdict} ({})",
                region.region,
                grouped(region.used()),
                grouped(region.length),
                percent(region.used(), region.length),
                parts.join(" + ")
            );
        }
        for warning in &self.warnings {
            let _ = writeln!(text, "  warning: {warning}");
        }
        text
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        100.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// `15440` as `15,440`.
pub(crate) fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs() -> MemoryNeeds {
        MemoryNeeds { code_workspace: 15_378, inputs: 490, outputs: 12, constants: 20_000, ..MemoryNeeds::default() }
    }

    fn alone<'a>(needs: &'a MemoryNeeds, placing: &'a Placing) -> FitModule<'a> {
        FitModule { name: "default", needs, group: None, placing }
    }

    fn layout(text: &str) -> MemoryLayout {
        memory_x::parse(text).unwrap()
    }

    #[test]
    fn a_small_ram_fails_with_the_parts_and_what_to_do() {
        let layout = layout("MEMORY {\n FLASH : ORIGIN = 0, LENGTH = 256K\n RAM : ORIGIN = 0x20000000, LENGTH = 8K\n}");
        let fit = fit(Path::new("memory.x"), &layout, &[alone(&needs(), &Placing::default())], Some(4_000)).unwrap();
        let error = fit.check().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DoesNotFit);
        assert_eq!(
            error.to_string().lines().next().unwrap(),
            "mlf-build: model `default` needs 15,880 B of RAM in region `RAM` (workspace 15,378 + inputs 490 + outputs 12), but memory.x line 3 gives it 8,192 B; this counts only what the model adds, not the application's own data"
        );
        assert!(error.help_text().unwrap().contains("Builder::link_section(Storage::Workspace"));
        assert_eq!(fit.regions[0].region, "FLASH");
        assert_eq!(fit.regions[0].used(), 24_000);
        // The application placing its buffers takes them out of the count.
        let placing = Placing { app_places_io_buffers: true, ..Placing::default() };
        let fit = super::fit(Path::new("memory.x"), &layout, &[alone(&needs(), &placing)], None).unwrap();
        assert_eq!(fit.regions[1].used(), 15_378);
    }

    #[test]
    fn a_placed_section_is_counted_in_its_region() {
        let layout = layout(
            "MEMORY {\n FLASH : ORIGIN = 0, LENGTH = 16K\n RAM : ORIGIN = 0x20000000, LENGTH = 8K\n SRAM2 : ORIGIN = 0x20002000, LENGTH = 16K\n}\n\
             SECTIONS { .sram2 (NOLOAD) : { *(.sram2 .sram2.*) } > SRAM2 } INSERT AFTER .bss;",
        );
        let placing = Placing { sections: SectionNames { workspace: Some(".sram2".into()), constants: None }, ..Placing::default() };
        let fit = fit(Path::new("memory.x"), &layout, &[alone(&needs(), &placing)], None).unwrap();
        let used: Vec<(&str, u64)> = fit.regions.iter().map(|r| (r.region.as_str(), r.used())).collect();
        assert_eq!(used, [("FLASH", 20_000), ("RAM", 502), ("SRAM2", 15_378)]);
        let error = fit.check().unwrap_err().to_string();
        assert!(error.contains("read-only memory in region `FLASH`") && error.contains("code is not counted"), "{error}");
        assert!(error.contains("opt-level"), "{error}");
        assert!(fit.warnings.is_empty());
        // A section the script does not take is counted in RAM, with a warning.
        let placing = Placing { sections: SectionNames { workspace: Some(".elsewhere".into()), constants: None }, ..Placing::default() };
        let fit = super::fit(Path::new("memory.x"), &layout, &[alone(&needs(), &placing)], None).unwrap();
        assert_eq!(fit.regions[1].used(), 15_880);
        assert!(fit.warnings[0].contains("no SECTIONS entry takes `.elsewhere`"), "{:?}", fit.warnings);
    }

    #[test]
    fn regions_come_from_aliases_or_are_asked_for() {
        let aliased = layout("MEMORY { L2 : ORIGIN = 0x80000000, LENGTH = 64K\n ROM : ORIGIN = 0, LENGTH = 1M }\nREGION_ALIAS(\"REGION_BSS\", L2);\nREGION_ALIAS(\"REGION_RODATA\", ROM);");
        let fit = fit(Path::new("memory.x"), &aliased, &[alone(&needs(), &Placing::default())], None).unwrap();
        assert!(fit.check().is_ok());
        assert_eq!(fit.regions.iter().map(|r| r.region.as_str()).collect::<Vec<_>>(), ["L2", "ROM"]);
        let nameless = layout("MEMORY { SRAM : ORIGIN = 0, LENGTH = 64K }");
        let error = super::fit(Path::new("memory.x"), &nameless, &[alone(&needs(), &Placing::default())], None).unwrap_err();
        assert!(error.to_string().contains("memory.x has no region `RAM` (nor a `REGION_BSS` alias)"), "{error}");
    }

    #[test]
    fn an_arena_group_is_counted_once_at_its_largest_member() {
        let layout = layout("MEMORY {\n FLASH : ORIGIN = 0, LENGTH = 256K\n RAM : ORIGIN = 0x20000000, LENGTH = 12K\n}");
        let kws =
            MemoryNeeds { arena: 9_000, group_scratch: 9_016, stepping: 40, inputs: 490, in_arena_group: true, ..MemoryNeeds::default() };
        let cnn = MemoryNeeds { storage: 4_000, group_scratch: 4_000, inputs: 100, in_arena_group: true, ..MemoryNeeds::default() };
        let placing = Placing::default();
        let member = |name, needs| FitModule { name, needs, group: Some("turns"), placing: &placing };
        let fit = fit(Path::new("memory.x"), &layout, &[member("kws", &kws), member("cnn", &cnn)], None).unwrap();
        let ram = &fit.regions[0];
        assert_eq!(ram.used(), 40 + 490 + 100 + 9_016, "{:?}", ram.parts);
        let shared: Vec<&FitPart> = ram.parts.iter().filter(|part| part.group.is_some()).collect();
        assert_eq!(shared.len(), 1);
        assert_eq!((shared[0].what, shared[0].bytes, shared[0].group.as_deref()), ("shared arena", 9_016, Some("turns")));
        assert!(fit.check().is_ok());
        // Apart, each counts its own scratch: 13,000 B of scratch in 12 KiB.
        let apart = |name, needs| FitModule { name, needs, group: None, placing: &placing };
        let (kws, cnn) = (MemoryNeeds { in_arena_group: false, ..kws }, MemoryNeeds { in_arena_group: false, ..cnn });
        let error =
            super::fit(Path::new("memory.x"), &layout, &[apart("kws", &kws), apart("cnn", &cnn)], None).unwrap().check().unwrap_err();
        assert!(error.to_string().contains("the models need 13,630 B of RAM in region `RAM` (`kws` arena 9,000"), "{error}");
        assert!(error.to_string().contains("gives it 12,288 B"), "{error}");
        assert!(fit.to_text().contains("arena group turns shared arena 9,016"), "{}", fit.to_text());
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(15_440), "15,440");
        assert_eq!(grouped(4_194_304), "4,194,304");
    }
}
