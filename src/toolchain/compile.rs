//! Compiles C with `cc` into static libraries and tells Cargo to link them.

use std::path::PathBuf;

use crate::cargo::directive::Directives;
use crate::error::{Error, ErrorKind, Result};
use crate::toolchain::sections::{self, SectionNames};
use crate::toolchain::static_lib;

/// `sources`, largest first: `cc` starts compiles in this order, so the
/// longest one does not start last and leave the other jobs idle.
fn largest_first(sources: &[PathBuf]) -> Vec<PathBuf> {
    let mut sized: Vec<(u64, &PathBuf)> = sources.iter().map(|path| (std::fs::metadata(path).map_or(0, |m| m.len()), path)).collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    sized.into_iter().map(|(_, path)| path.clone()).collect()
}

/// Flags every compile gets for the stack bound (`toolchain::stack`); part of the cache keys.
pub(crate) const STACK_FLAGS: [&str; 2] = ["-fstack-usage", "-ffunction-sections"];

/// One static library to build.
pub(crate) struct Library {
    /// `lib<name>.a`.
    pub name: String,
    pub c_sources: Vec<PathBuf>,
    pub cxx_sources: Vec<PathBuf>,
    pub objects: Vec<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
    pub defines: Vec<(String, Option<String>)>,
    /// Where objects and the archive go; stable so `cc`'s object names stay stable.
    pub out_dir: PathBuf,
    /// Show the compiler's warnings (generated code has many).
    pub show_warnings: bool,
    /// Where the link lines and the compiler's warnings go.
    pub directives: Directives,
    /// The linker sections the model's memory goes to (`Builder::link_section`).
    pub sections: SectionNames,
    /// Sources that are not the model's (kernels, the user's, mlf-build's
    /// runtime): their objects keep their sections.
    pub external_sources: Vec<PathBuf>,
}

impl Library {
    /// Compiles the library from `base` (the user's `cc::Build`, if any).
    pub fn compile(&self, base: &cc::Build) -> Result<()> {
        std::fs::create_dir_all(&self.out_dir).map_err(|e| Error::io("create", &self.out_dir, e))?;
        let mut cxx_objects = Vec::new();
        if !self.cxx_sources.is_empty() {
            // cc compiles one language per build: C++ goes in a sibling library.
            let mut cxx = self.configured(base);
            let sources = largest_first(&self.cxx_sources);
            cxx.cpp(true).files(&sources);
            cxx_objects = cxx.try_compile_intermediates().map_err(|e| self.compile_error(base, e))?;
            self.place_sections(&sources, &cxx_objects)?;
            self.archive(base, &format!("{}_cxx", self.name), &cxx_objects)?;
        }
        let mut build = self.configured(base);
        let sources = largest_first(&self.c_sources);
        build.files(&sources);
        let mut objects = build.try_compile_intermediates().map_err(|e| self.compile_error(base, e))?;
        self.place_sections(&sources, &objects)?;
        for (index, object) in self.objects.iter().enumerate() {
            if self.sections.is_empty() {
                objects.push(object.clone());
            } else {
                // The archive's own objects: placed in copies, the tree stays as unpacked.
                let placed = sections::placed_copy(object, &self.out_dir, index);
                sections::place(object, &placed, &self.sections)?;
                objects.push(placed);
            }
        }
        self.archive(base, &self.name, &objects)?;
        // For the stack bound, which a cached build reads again.
        let mut list: Vec<String> = cxx_objects.iter().chain(&objects).map(|path| path.display().to_string()).collect();
        list.push(String::new());
        let path = self.object_list();
        std::fs::write(&path, list.join("\n")).map_err(|e| Error::io("write", &path, e))
    }

    /// `lib<name>.objects`: the path of every object in the library, one per
    /// line (`-fstack-usage` writes each one's `.su` file beside it).
    pub fn object_list(&self) -> PathBuf {
        self.out_dir.join(format!("lib{}.objects", self.name))
    }

    /// Renames the sections of the model's objects (`objects[i]` compiled from
    /// `sources[i]`, as `cc` returns them) to the user's linker sections.
    fn place_sections(&self, sources: &[PathBuf], objects: &[PathBuf]) -> Result<()> {
        if self.sections.is_empty() {
            return Ok(());
        }
        for (source, object) in sources.iter().zip(objects) {
            if !self.external_sources.contains(source) {
                sections::place(object, object, &self.sections)?;
            }
        }
        Ok(())
    }

    /// The static libraries [`Library::compile`] writes.
    pub fn archives(&self) -> Vec<PathBuf> {
        let mut names = vec![self.name.clone()];
        if !self.cxx_sources.is_empty() {
            names.push(format!("{}_cxx", self.name));
        }
        names.iter().map(|name| self.out_dir.join(format!("lib{name}.a"))).collect()
    }

    /// `lib<name>.a` of `objects`: written here when they are ELF, else by the
    /// toolchain's archiver through `cc`.
    fn archive(&self, base: &cc::Build, name: &str, objects: &[PathBuf]) -> Result<()> {
        if static_lib::write_elf_library(&self.out_dir.join(format!("lib{name}.a")), objects)? {
            return Ok(());
        }
        let mut build = self.configured(base);
        build.objects(objects);
        build.try_compile(name).map_err(|e| self.compile_error(base, e))
    }

    /// The error for a failed compilation, with the compiler's first error lines:
    /// `cc` discards stderr when warnings are silenced, so the first failing
    /// source is compiled again with stderr captured.
    fn compile_error(&self, base: &cc::Build, error: cc::Error) -> Error {
        let diagnostics = self.first_errors(base);
        let message = match &diagnostics {
            Some((file, lines)) => format!("compiling `{}` failed in `{}`:\n{lines}", self.name, file.display()),
            None => format!("compiling `{}` failed: {error}", self.name),
        };
        let help = if diagnostics.is_some() {
            "the compiler's first errors are shown above; Builder::show_warnings(true) shows every diagnostic"
        } else {
            "Builder::show_warnings(true) shows the compiler's output"
        };
        Error::new(ErrorKind::Compile, message).help(help).with_source(error)
    }

    /// The first source that fails to compile on its own and its first error lines.
    fn first_errors(&self, base: &cc::Build) -> Option<(PathBuf, String)> {
        const MAX_LINES: usize = 20;
        let probe = self.out_dir.join("mlf_error_probe.o");
        let sources = self.c_sources.iter().map(|s| (s, false)).chain(self.cxx_sources.iter().map(|s| (s, true)));
        for (source, cpp) in sources {
            let mut build = self.configured(base);
            build.cpp(cpp);
            let mut command = build.try_get_compiler().ok()?.to_command();
            let output = command.arg("-c").arg(source).arg("-o").arg(&probe).output().ok()?;
            let _ = std::fs::remove_file(&probe);
            if output.status.success() {
                continue;
            }
            let stderr = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<String> =
                stderr.lines().filter(|line| !line.trim().is_empty()).take(MAX_LINES).map(crate::error::printable).collect();
            return Some((source.clone(), lines.join("\n")));
        }
        None
    }

    fn configured(&self, base: &cc::Build) -> cc::Build {
        let mut build = base.clone();
        build
            .out_dir(&self.out_dir)
            .cargo_metadata(false)
            .cargo_warnings(self.show_warnings && self.directives.print)
            .cargo_output(self.directives.print)
            .warnings(self.show_warnings)
            .extra_warnings(false);
        // From the compiler's family (known to `cc` already), not from a probe compile.
        let msvc = build.try_get_compiler().is_ok_and(|tool| tool.is_like_msvc());
        if !self.show_warnings {
            build.flag(if msvc { "/w" } else { "-w" });
        }
        if !msvc {
            // Each function's frame in a `.su` file and each function in a section of
            // its own (cc's default too), for the stack bound; the code is unchanged.
            for flag in STACK_FLAGS {
                build.flag(flag);
            }
        }
        for dir in &self.include_dirs {
            build.include(dir);
        }
        for (name, value) in &self.defines {
            build.define(name, value.as_deref());
        }
        if self.sections.workspace.is_some() {
            // Tentative definitions would be COMMON symbols, in no section to rename.
            build.flag("-fno-common");
        }
        build
    }

    /// Prints the link directives; done by us rather than `cc` so a cached build can replay them.
    pub fn link(&self) -> Result<()> {
        self.directives.link_static(&self.out_dir, &self.name)?;
        if !self.cxx_sources.is_empty() {
            self.directives.link_static(&self.out_dir, &format!("{}_cxx", self.name))?;
        }
        Ok(())
    }

    /// Whether the compiler, configured as for this library, finds `header`
    /// (asked by preprocessing a one-line probe file).
    pub fn compiler_finds(&self, base: &cc::Build, header: &str) -> bool {
        let probe = self.out_dir.join("mlf_header_probe.c");
        if std::fs::create_dir_all(&self.out_dir).is_err() || std::fs::write(&probe, format!("#include <{header}>\n")).is_err() {
            return true;
        }
        let mut build = self.configured(base);
        build.file(&probe).cargo_warnings(false);
        let found = build.try_expand().is_ok();
        let _ = std::fs::remove_file(&probe);
        found
    }

    /// Whether the archive from an earlier build is still there.
    pub fn is_built(&self) -> bool {
        self.out_dir.join(format!("lib{}.a", self.name)).is_file()
    }
}
