// SPDX-License-Identifier: GPL-2.0

//! `#[kunit_tests]`: a module of `#[test]` functions as a KUnit suite.
//!
//! The attribute rewrites only tokens and leaves what a suite *is* to the `kernel`
//! crate it expands against: it hands the case names to `kernel::__kunit_suite!` and
//! turns `assert!`, `assert_eq!` and `assert_ne!` into `kernel::__kunit_assert*!`. The
//! shim makes those a `KUNIT_SUITE` static for its KTAP runner and the standard
//! assertions. Inside a kernel the suites expand with Linux 7.3's own `#[kunit_tests]`.

use proc_macro::{
    Delimiter,
    Group,
    Ident,
    Punct,
    Spacing,
    TokenStream,
    TokenTree, //
};

/// Expands `#[kunit_tests(suite)]` on `item`.
pub(crate) fn kunit_tests(attr: TokenStream, item: TokenStream) -> TokenStream {
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
                let mut body = rewrite_asserts(body);
                body.extend(suite_decl(&suite, &cases));
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

/// Rewrites `assert!`, `assert_eq!` and `assert_ne!` anywhere in `tokens` (not those
/// named by a path, like `core::assert!`) into the `kernel` crate's `__kunit_assert!`,
/// `__kunit_assert_eq!` and `__kunit_assert_ne!`, which take the same arguments.
fn rewrite_asserts(tokens: Vec<TokenTree>) -> Vec<TokenTree> {
    let mut out: Vec<TokenTree> = Vec::with_capacity(tokens.len());
    let mut tokens = tokens.into_iter().peekable();
    while let Some(tt) = tokens.next() {
        match tt {
            TokenTree::Ident(ref name)
                if matches!(
                    name.to_string().as_str(),
                    "assert" | "assert_eq" | "assert_ne"
                ) && matches!(tokens.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '!')
                    && !matches!(out.last(), Some(TokenTree::Punct(p)) if p.as_char() == ':') =>
            {
                // Every token of the path gets the span of the user's macro name, so
                // `file!()` and `line!()` in the expansion name the assertion's line.
                let span = name.span();
                let punct = |spacing| {
                    let mut p = Punct::new(':', spacing);
                    p.set_span(span);
                    TokenTree::Punct(p)
                };
                out.extend([
                    punct(Spacing::Joint),
                    punct(Spacing::Alone),
                    TokenTree::Ident(Ident::new("kernel", span)),
                    punct(Spacing::Joint),
                    punct(Spacing::Alone),
                    TokenTree::Ident(Ident::new(&format!("__kunit_{name}"), span)),
                ]);
            }
            TokenTree::Group(g) => {
                let inner = rewrite_asserts(g.stream().into_iter().collect());
                let mut group = Group::new(g.delimiter(), inner.into_iter().collect());
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            other => out.push(other),
        }
    }
    out
}

/// Declares the suite through the `kernel` crate's `__kunit_suite!`.
fn suite_decl(suite: &str, cases: &[String]) -> Vec<TokenTree> {
    parse(&format!(
        "::kernel::__kunit_suite!({suite}, [{}]);",
        cases.join(", ")
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
