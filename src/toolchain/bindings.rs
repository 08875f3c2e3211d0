//! Rust bindings for a module's entry point and interface header, by bindgen.
//! Generation returns a string; writing it is the emitter's job.

use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Result};

/// What bindgen reads for one module: options as plain data.
#[derive(Debug, Clone)]
pub(crate) struct BindingsSpec {
    /// The glue header, which includes the interface and descriptor headers.
    pub header: PathBuf,
    pub include_dirs: Vec<PathBuf>,
    /// Extra clang arguments (target include directories, defines).
    pub clang_args: Vec<String>,
    /// Regexes of the functions, types and constants to keep.
    pub allow: Vec<String>,
    /// The prefix the crate's symbols carry in its libraries
    /// (`objects::rename`): functions and variables are declared under
    /// their C names and linked under the prefixed ones, but for `unprefixed`.
    pub link_prefix: Option<String>,
    pub unprefixed: Vec<String>,
}

/// Links each function and variable bindgen declares to its prefixed symbol.
#[derive(Debug)]
struct PrefixedLinkNames {
    prefix: String,
    unprefixed: Vec<String>,
}

impl bindgen::callbacks::ParseCallbacks for PrefixedLinkNames {
    fn generated_link_name_override(&self, item: bindgen::callbacks::ItemInfo<'_>) -> Option<String> {
        let name = item.name;
        (!self.unprefixed.iter().any(|kept| kept == name)).then(|| format!("{}{name}", self.prefix))
    }
}

pub(crate) fn generate(spec: &BindingsSpec) -> Result<String> {
    let mut builder = bindgen::Builder::default()
        .header(spec.header.to_string_lossy())
        .use_core()
        .ctypes_prefix("::core::ffi")
        .prepend_enum_name(false)
        .layout_tests(true)
        .generate_comments(false)
        .merge_extern_blocks(true)
        // `#define` status codes compare with the C functions' `int32_t` results.
        .default_macro_constant_type(bindgen::MacroTypeVariation::Signed)
        .formatter(bindgen::Formatter::Prettyplease);
    for pattern in &spec.allow {
        builder = builder.allowlist_function(pattern).allowlist_type(pattern).allowlist_var(pattern);
    }
    for dir in &spec.include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    builder = builder.clang_args(&spec.clang_args);
    if let Some(prefix) = &spec.link_prefix {
        builder = builder.parse_callbacks(Box::new(PrefixedLinkNames { prefix: prefix.clone(), unprefixed: spec.unprefixed.clone() }));
    }
    let header = spec.header.display().to_string();
    let bindings = generate_catching_panics(builder).map_err(|message| libclang_error(&header, &message))?.map_err(|error| {
        Error::new(ErrorKind::Bindings, format!("bindgen could not parse the header: {error}"))
            .in_file(&header)
            .help("the interface header must be valid C; run with Builder::show_warnings(true) to see clang's diagnostics")
    })?;
    let text = bindings.to_string();
    match &spec.link_prefix {
        Some(prefix) => link_statics(&text, prefix, &spec.unprefixed)
            .map_err(|error| Error::new(ErrorKind::Bindings, format!("bindgen's output does not parse: {error}")).in_file(&header)),
        None => Ok(text),
    }
}

/// Gives each foreign `static` its prefixed link name: bindgen 0.72 asks
/// [`PrefixedLinkNames`] for variables too, but writes the answer only for functions.
fn link_statics(bindings: &str, prefix: &str, unprefixed: &[String]) -> syn::Result<String> {
    let mut file = syn::parse_file(bindings)?;
    for item in &mut file.items {
        let syn::Item::ForeignMod(block) = item else { continue };
        for foreign in &mut block.items {
            let syn::ForeignItem::Static(item) = foreign else { continue };
            let name = item.ident.to_string();
            let linked = item.attrs.iter().any(|attr| attr.path().is_ident("link_name"));
            if !linked && !unprefixed.contains(&name) {
                let symbol = format!("\u{1}{prefix}{name}");
                item.attrs.push(syn::parse_quote!(#[link_name = #symbol]));
            }
        }
    }
    Ok(prettyplease::unparse(&file))
}

/// bindgen panics when libclang cannot be loaded; turn that into an error.
fn generate_catching_panics(
    builder: bindgen::Builder,
) -> std::result::Result<std::result::Result<bindgen::Bindings, bindgen::BindgenError>, String> {
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // The builder is consumed and never observed after a panic.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let builder = match clang_resource_include() {
            Some(dir) => builder.clang_arg("-isystem").clang_arg(dir.display().to_string()),
            None => builder,
        };
        builder.generate()
    }));
    std::panic::set_hook(previous_hook);
    result.map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "bindgen panicked".to_string())
    })
}

/// Loads libclang and finds its headers ahead of [`generate`], so that work
/// overlaps with the toolchain probes (bindgen keeps the library for every thread).
pub(crate) fn preload() {
    clang_resource_include();
}

/// clang's own `stddef.h`/`stdint.h`. Debian's libclang looks for them beside
/// the library, not where `libclang-common-*-dev` puts them; host builds
/// never notice (the host's gcc headers serve), cross builds do.
fn clang_resource_include() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND.get_or_init(find_clang_resource_include).clone()
}

fn find_clang_resource_include() -> Option<PathBuf> {
    let version = bindgen::clang_version();
    let (major, _) = version.parsed?;
    let patterns = [format!("/usr/lib/llvm-{major}/lib/clang/*/include"), format!("/usr/lib/clang/{major}*/include")];
    patterns
        .iter()
        .filter_map(|pattern| glob::glob(pattern).ok())
        .flatten()
        .filter_map(|entry| entry.ok())
        .find(|dir| dir.join("stddef.h").is_file())
}

fn libclang_error(header: &str, message: &str) -> Error {
    let libclang = message.contains("libclang") || message.contains("clang");
    let text = if libclang { format!("bindgen could not load libclang: {message}") } else { format!("bindgen failed: {message}") };
    Error::new(if libclang { ErrorKind::Toolchain } else { ErrorKind::Bindings }, text)
        .in_file(header)
        .help("install libclang (Debian/Ubuntu: `apt-get install --no-install-recommends libclang1-14 libclang-common-14-dev`), or point LIBCLANG_PATH at the directory holding libclang.so")
}
