// SPDX-License-Identifier: GPL-2.0

//! Procedural macros of the `kernel` shim.
//!
//! Like the kernel's own `macros` crate they use only `proc_macro`, no `syn`, so the same
//! source builds as a host library inside a kernel tree.

use proc_macro::{
    Delimiter,
    Group,
    TokenStream,
    TokenTree, //
};

/// Marks a module as a KUnit suite.
///
/// ```ignore
/// #[kunit_tests(nova_core_fw)]
/// mod tests {
///     #[test]
///     fn checksum_of_zeroes_is_zero() {
///         assert_eq!(checksum(&[0; 16]), 0);
///     }
/// }
/// ```
///
/// Every `#[test]` function of the module stays a test of the host's `cargo test` and
/// becomes a case of the static `KUNIT_SUITE: kernel::kunit::Suite` added to the module,
/// which a KUnit executor runs and reports as KTAP. Cases return `()` or
/// `kernel::error::Result`.
#[proc_macro_attribute]
pub fn kunit_tests(attr: TokenStream, item: TokenStream) -> TokenStream {
    let suite = attr.to_string();
    if suite.is_empty() || !suite.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return compile_error("#[kunit_tests(name)]: the suite name must be an identifier");
    }

    let mut out: Vec<TokenTree> = Vec::new();
    let mut saw_mod = false;
    for tt in item {
        match &tt {
            TokenTree::Ident(i) if i.to_string() == "mod" => {
                saw_mod = true;
                out.push(tt);
            }
            TokenTree::Group(g) if saw_mod && g.delimiter() == Delimiter::Brace => {
                let (body, cases) = rewrite_body(g.stream());
                if cases.is_empty() {
                    return compile_error("#[kunit_tests]: the module has no #[test] functions");
                }
                let mut body: Vec<TokenTree> = body;
                body.extend(suite_static(&suite, &cases));
                let mut group = Group::new(Delimiter::Brace, body.into_iter().collect());
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            _ => out.push(tt),
        }
    }
    if !saw_mod {
        return compile_error("#[kunit_tests] applies to an inline `mod name { ... }`");
    }
    out.into_iter().collect()
}

/// Rewrites `#[test]` into `#[cfg_attr(test, test)]` and collects the case names.
fn rewrite_body(body: TokenStream) -> (Vec<TokenTree>, Vec<String>) {
    let mut out = Vec::new();
    let mut cases = Vec::new();
    let mut pending_case = false;
    let mut tokens = body.into_iter().peekable();
    while let Some(tt) = tokens.next() {
        if let TokenTree::Punct(p) = &tt {
            if p.as_char() == '#' {
                if let Some(TokenTree::Group(g)) = tokens.peek() {
                    if g.delimiter() == Delimiter::Bracket && g.stream().to_string() == "test" {
                        tokens.next();
                        pending_case = true;
                        out.extend(parse("#[cfg_attr(test, test)]"));
                        continue;
                    }
                }
            }
        }
        if pending_case {
            if let TokenTree::Ident(i) = &tt {
                if i.to_string() == "fn" {
                    out.push(tt);
                    if let Some(name @ TokenTree::Ident(_)) = tokens.next() {
                        cases.push(name.to_string());
                        out.push(name);
                    }
                    pending_case = false;
                    continue;
                }
            }
        }
        out.push(tt);
    }
    (out, cases)
}

fn suite_static(suite: &str, cases: &[String]) -> Vec<TokenTree> {
    let mut list = String::new();
    for case in cases {
        list.push_str(&format!(
            "::kernel::kunit::Case {{ name: \"{case}\", \
             run: || ::kernel::kunit::IntoOutcome::into_outcome({case}()) }},"
        ));
    }
    parse(&format!(
        "/// The KUnit suite of this module.\n\
         pub static KUNIT_SUITE: ::kernel::kunit::Suite = ::kernel::kunit::Suite {{ \
         name: \"{suite}\", cases: &[{list}] }};"
    ))
}

fn parse(s: &str) -> Vec<TokenTree> {
    // PANIC: only called on the fixed, well-formed snippets above.
    s.parse::<TokenStream>()
        .expect("kunit_tests: bad generated code")
        .into_iter()
        .collect()
}

fn compile_error(msg: &str) -> TokenStream {
    parse(&format!("::core::compile_error!({msg:?});"))
        .into_iter()
        .collect()
}
