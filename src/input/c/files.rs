//! Every C source and header of an archive's generated code, each parsed
//! once ([`CFiles::parse`]), with the limits a C text must keep checked on
//! the way: its length and bracket depth (by the parser itself) and how far
//! its macros expand ([`check_macros`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::Result;
use crate::input::archive::Tree;
use crate::input::c::limits::{check_macros, MacroDefinition};
use crate::input::c::parser::parse::parse;
use crate::input::c::parser::syntax::CSource;
use crate::input::c::text::strip_comments;
use crate::input::sources::{INCLUDE_DIR, SRC_DIR};

/// The text of every C source and header under `codegen/host/{src,include}`,
/// decoded once: borrowed from the tree when it is UTF-8 (as TVM writes it),
/// else with each invalid sequence replaced.
pub(crate) struct CTexts<'t> {
    files: Vec<(&'t str, Cow<'t, str>)>,
}

impl<'t> CTexts<'t> {
    pub fn of(tree: &'t Tree) -> CTexts<'t> {
        let files = tree
            .files_under(SRC_DIR)
            .chain(tree.files_under(INCLUDE_DIR))
            .filter(|path| is_c_file(path))
            .map(|path| (path, String::from_utf8_lossy(tree.get(path).unwrap_or_default())))
            .collect();
        CTexts { files }
    }
}

/// Whether `path` names a C or C++ source or header.
fn is_c_file(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(_, ext)| matches!(ext, "c" | "cc" | "cpp" | "cxx" | "h" | "hh" | "hpp" | "hxx"))
}

/// The archive's C sources and headers, parsed, by path.
pub(crate) struct CFiles<'c> {
    sources: BTreeMap<&'c str, CSource<'c>>,
}

impl<'c> CFiles<'c> {
    /// Parses every file of `texts`, sources then headers, and checks its
    /// macros: no `#define` among them, and no invocation in their code
    /// (as one program may include them all), expands past the limits of
    /// [`check_macros`]. The first file that breaks a limit is the error.
    pub fn parse(texts: &'c CTexts<'_>) -> Result<CFiles<'c>> {
        let mut sources = BTreeMap::new();
        for (path, text) in &texts.files {
            sources.insert(*path, parse(path, text)?);
        }
        let definitions: Vec<MacroDefinition<'_>> =
            texts.files.iter().filter_map(|(path, _)| sources.get(path)).flat_map(MacroDefinition::all_of).collect();
        let macros = check_macros(&definitions)?;
        // Only a file that names a function-like macro can invoke one: the one text read again.
        for (path, _) in &texts.files {
            if let Some(source) = sources.get(path).filter(|source| macros.named_in(source)) {
                macros.check_code(path, &strip_comments(source.text()))?;
            }
        }
        Ok(CFiles { sources })
    }

    /// The parsed file at `path` (under `codegen/host/src` or `include`).
    pub fn get(&self, path: &str) -> Option<&CSource<'c>> {
        self.sources.get(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        Tree::from_files(files.iter().map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))).unwrap()
    }

    /// Macros defined in a header and invoked in a source are checked
    /// together; a source naming none is not read again, and text that is
    /// no C file is not read at all.
    #[test]
    fn macros_of_every_file_are_checked_together() {
        let nested = |depth: usize| format!("{}1{}", "D(".repeat(depth), ")".repeat(depth));
        let header = ("codegen/host/include/tvmgen_default.h", "#define D(x) x x /* \"D(D(\" */\n");
        let deep = format!("int f(void) {{\n  return {};\n}}\n", nested(40));
        let error = CFiles::parse(&CTexts::of(&tree(&[header, ("codegen/host/src/default_lib1.c", &deep)]))).err().expect("refused");
        assert!(error.to_string().contains("macro `D` invoked at line 2 expands to more than 67108864 tokens"), "{error}");
        assert_eq!(error.file(), Some("codegen/host/src/default_lib1.c"));
        let shallow = format!("int f(void) {{ return {}; }}\n", nested(5));
        let files = tree(&[header, ("codegen/host/src/default_lib1.c", &shallow), ("codegen/host/src/notes.txt", &deep)]);
        let texts = CTexts::of(&files);
        let files = CFiles::parse(&texts).unwrap();
        assert!(files.get("codegen/host/src/default_lib1.c").is_some_and(|source| source.function("f").is_some()));
        assert!(files.get("codegen/host/src/notes.txt").is_none());
    }

    /// Every archive of the corpus passes the checks of its C text: its
    /// macros and their nested invocations among them.
    #[test]
    fn corpus_c_text_passes_its_checks() {
        let Some(dir) = crate::test_support::corpus_dir() else { return };
        let tars: Vec<_> = glob::glob(&format!("{}/**/model.tar", dir.display())).unwrap().map(|p| p.unwrap()).collect();
        for tar in &tars {
            let tree = Tree::load(tar, Default::default()).unwrap();
            CFiles::parse(&CTexts::of(&tree)).unwrap_or_else(|error| panic!("{}: {error}", tar.display()));
        }
        assert!(tars.len() >= 4, "{tars:?}");
    }
}
