//! The C parser: one streaming pass per file over the [lexer](super::lexer)
//! keeps its directives and file-scope declarations ([`parse`]); a function
//! body's statements are parsed on first question ([`body`]).

pub(crate) mod body;
pub(crate) mod numeric;
pub(crate) mod parse;
pub(crate) mod syntax;
