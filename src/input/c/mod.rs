//! The C front end: one [lexer] for an archive's C text, the [parser] that
//! reads each file once, the archive's files parsed together ([`files`]),
//! the text primitives the older scanners share ([`text`]), and the limits a
//! C text must keep ([`limits`]).

pub(crate) mod files;
pub(crate) mod lexer;
pub(crate) mod limits;
// The build reads its file-scope values (`CFiles::parse`); function bodies
// and signatures only its tests and the `c_parser` fuzz target read, until
// the scanners asking about them move onto it (plan33 steps 5 to 13).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod parser;
pub(crate) mod text;

pub(crate) use files::{CFiles, CTexts};
pub(crate) use text::{
    called_functions, closing, function_definitions, integer, is_static, split_top_level, strip_comments, trailing_identifier_start,
    FunctionIndex,
};
