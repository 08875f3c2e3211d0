//! `Builder::rename_module`: builds a module under another name, as if TVM had
//! exported it with that `mod_name`. TVM prefixes every symbol and file of
//! module `m` with `tvmgen_m_` / `TVMGEN_M_` / `m_`, so renaming rewrites those
//! prefixes in the module's generated sources and header.

use crate::error::{Error, ErrorKind, Result};
use crate::input::archive::Tree;
use crate::input::metadata::Metadata;
use crate::input::sources;

/// Applies each `(from, to)` rename to the tree and the metadata.
pub(crate) fn apply(tree: Tree, metadata: &mut Metadata, renames: &[(String, String)]) -> Result<Tree> {
    if renames.is_empty() {
        return Ok(tree);
    }
    let mut files = tree.into_files();
    for (from, to) in renames {
        let names: Vec<&str> = metadata.modules.iter().map(|m| m.name.as_str()).collect();
        if !names.contains(&from.as_str()) {
            return Err(Error::new(ErrorKind::Config, format!("rename_module(\"{from}\", \"{to}\"): the archive has no module `{from}`"))
                .help(format!("its modules are: {}", names.join(", "))));
        }
        if !crate::ident::is_c_identifier(to) {
            return Err(Error::new(ErrorKind::Config, format!("rename_module(\"{from}\", \"{to}\"): `{to}` is not a C identifier"))
                .help(format!("use {}, at most {} bytes", crate::ident::C_IDENTIFIER_RULE, crate::ident::MAX_NAME_BYTES)));
        }
        if names.contains(&to.as_str()) && from != to {
            return Err(Error::new(
                ErrorKind::Config,
                format!("rename_module(\"{from}\", \"{to}\"): the archive already has a module `{to}`"),
            ));
        }
        let single = names.len() == 1;
        let owned = |file: &str| single || sources::owner(file, &names) == Some(from.as_str());
        let header = format!("tvmgen_{from}.h");
        let mut renamed = std::collections::BTreeMap::new();
        for (path, bytes) in std::mem::take(&mut files) {
            let (dir, file) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            let in_src = dir == sources::SRC_DIR;
            let is_header = dir == sources::INCLUDE_DIR && file == header;
            if dir == sources::LIB_DIR && owned(file) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "rename_module(\"{from}\", \"{to}\"): module `{from}` comes with prebuilt objects, whose symbols cannot be renamed"
                    ),
                )
                .in_file(path.clone())
                .help(format!("build module `{from}` under its own name (no rename_module for it), and rename the other archive's module, whose symbols come from sources, if the two clash")));
            }
            if !(is_header || in_src && owned(file)) {
                renamed.insert(path, bytes);
                continue;
            }
            let new_file = if is_header {
                format!("tvmgen_{to}.h")
            } else {
                file.strip_prefix(&format!("{from}_")).map_or_else(|| file.to_string(), |rest| format!("{to}_{rest}"))
            };
            let text = String::from_utf8_lossy(&bytes);
            renamed.insert(format!("{dir}/{new_file}"), rename_symbols(&text, from, to).into_bytes());
        }
        files = renamed;
        for module in metadata.modules.iter_mut().filter(|m| &m.name == from) {
            module.name = to.clone();
        }
    }
    metadata.modules.sort_by(|a, b| a.name.cmp(&b.name));
    Tree::from_files(files)
}

/// Replaces the identifier prefixes `tvmgen_<from>` (before `_` or `.`) and `TVMGEN_<FROM>_`.
fn rename_symbols(text: &str, from: &str, to: &str) -> String {
    let pairs = [
        (format!("tvmgen_{from}"), format!("tvmgen_{to}"), ['_', '.']),
        (format!("TVMGEN_{}", from.to_uppercase()), format!("TVMGEN_{}", to.to_uppercase()), ['_', '_']),
    ];
    let mut out = text.to_string();
    for (old, new, followers) in pairs {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(&old) {
            let before = rest[..at].chars().next_back().or_else(|| result.chars().next_back());
            let after = rest[at + old.len()..].chars().next();
            let starts_identifier = !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            result.push_str(&rest[..at]);
            if starts_identifier && after.is_some_and(|c| followers.contains(&c)) {
                result.push_str(&new);
            } else {
                result.push_str(&old);
            }
            rest = &rest[at + old.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_whole_prefixes_only() {
        let text = "#include \"tvmgen_default.h\"\nint32_t tvmgen_default_run(void);\n#define TVMGEN_DEFAULT_X_SIZE 4\nmy_tvmgen_default_x tvmgen_defaults_y";
        let renamed = rename_symbols(text, "default", "kws");
        assert_eq!(
            renamed,
            "#include \"tvmgen_kws.h\"\nint32_t tvmgen_kws_run(void);\n#define TVMGEN_KWS_X_SIZE 4\nmy_tvmgen_default_x tvmgen_defaults_y"
        );
    }
}
