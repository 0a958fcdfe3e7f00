// SPDX-License-Identifier: GPL-2.0

//! `#[kunit_tests]`: a module of `#[test]` functions as a KUnit suite.
//!
//! The expansion has the shape of Linux 7.3's, item for item, so that what builds here
//! builds there and an assertion does what it does there; only the types are the host's
//! (`kernel::kunit`, whose macros the expansion calls). For each `#[test]` function of
//! the module, in place:
//!
//! - `assert!` and `assert_eq!` are declared again as `macro_rules!`, just before the
//!   function: from there to the end of the module (a case's body, and any helper
//!   written after the first case) they are KUnit's, which take a condition (or two
//!   operands) and no message. Before the first case, and outside the module, they stay
//!   `core`'s, and `assert_ne!` is `core`'s everywhere, as in 7.3;
//! - the function loses `#[test]` and keeps every other attribute, its `#[cfg]`s
//!   included.
//!
//! At the end of the module, for each case, `kunit_rust_wrapper_<case>` (7.3's name) runs
//! it and fails it if it returns an `Err`; a case whose `#[cfg]`s are false gets one that
//! reports it skipped. The wrapper is also the case's host `#[test]` (ignored when the
//! case is configured out), the one thing 7.3 does not do. Then `TEST_CASES` lists every
//! wrapper, and `kernel::__kunit_suite!` makes of it the module's `KUNIT_SUITE` static
//! for the host's KTAP runner, where 7.3 registers the suite with KUnit.

use proc_macro::{
    Delimiter,
    Group,
    Ident,
    Span,
    TokenStream,
    TokenTree, //
};

/// The longest suite name KUnit takes, in bytes.
const MAX_SUITE_NAME: usize = 255;

/// One `#[test]` function of the module.
struct Case {
    /// The function's name.
    name: Ident,
    /// The conditions of its `#[cfg(...)]` attributes, in order; `None` if one of those
    /// attributes is not of that form (the compiler reports it on the function).
    cfgs: Option<Vec<TokenStream>>,
}

/// Expands `#[kunit_tests(suite)]` on `item`.
pub(crate) fn kunit_tests(attr: TokenStream, item: TokenStream) -> TokenStream {
    let suite = match suite_name(attr) {
        Ok(suite) => suite,
        Err(e) => return e,
    };

    let mut out: Vec<TokenTree> = Vec::new();
    let mut tokens = item.into_iter();
    let mut saw_mod = false;
    while let Some(tt) = tokens.next() {
        match &tt {
            TokenTree::Ident(i) if i.to_string() == "mod" => {
                saw_mod = true;
                out.push(tt);
            }
            TokenTree::Group(g) if saw_mod && g.delimiter() == Delimiter::Brace => {
                let (mut body, cases) = rewrite_body(g.stream());
                for case in &cases {
                    body.extend(wrapper(case));
                }
                body.extend(suite_decl(&suite, &cases));
                let mut group = Group::new(Delimiter::Brace, body.into_iter().collect());
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
                out.extend(tokens);
                return out.into_iter().collect();
            }
            TokenTree::Punct(p) if saw_mod && p.as_char() == ';' => {
                return compile_error(
                    "#[kunit_tests(name)] applies to an inline module (`mod name { ... }`), \
                     not to `mod name;`",
                );
            }
            _ => out.push(tt),
        }
    }
    compile_error("#[kunit_tests(name)] applies to an inline module (`mod name { ... }`)")
}

/// The suite's name: one identifier of at most [`MAX_SUITE_NAME`] bytes.
fn suite_name(attr: TokenStream) -> Result<String, TokenStream> {
    let mut tokens = attr.into_iter();
    let (Some(TokenTree::Ident(name)), None) = (tokens.next(), tokens.next()) else {
        return Err(compile_error(
            "#[kunit_tests(name)]: the suite name must be an identifier",
        ));
    };
    let name = name.to_string();
    if name.len() > MAX_SUITE_NAME {
        return Err(compile_error(
            "#[kunit_tests(name)]: a suite name has at most 255 bytes",
        ));
    }
    Ok(name)
}

/// Rewrites the module's items: before each `#[test]` function, the declarations of
/// `assert!` and `assert_eq!`; on it, every attribute but `#[test]`. Returns the items
/// and the cases, in order.
fn rewrite_body(body: TokenStream) -> (Vec<TokenTree>, Vec<Case>) {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut cases = Vec::new();
    // The outer attributes read since the last item began: `#` and its `[...]`.
    let mut attrs: Vec<(TokenTree, Group)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let (TokenTree::Punct(p), Some(TokenTree::Group(g))) = (&tokens[i], tokens.get(i + 1)) {
            if p.as_char() == '#' && g.delimiter() == Delimiter::Bracket {
                attrs.push((tokens[i].clone(), g.clone()));
                i += 2;
                continue;
            }
        }
        if !attrs.is_empty() {
            let test = attrs.iter().any(|(_, g)| attr_is(g, "test"));
            match fn_name(&tokens[i..]) {
                Some(name) if test => {
                    out.extend(parse(SHADOWED_ASSERTS));
                    let mut cfgs = Some(Vec::new());
                    for (hash, g) in attrs.drain(..) {
                        if attr_is(&g, "test") {
                            continue;
                        }
                        if attr_is(&g, "cfg") {
                            let cond = cfg_condition(&g);
                            match (&mut cfgs, cond) {
                                (Some(list), Some(cond)) => list.push(cond),
                                _ => cfgs = None,
                            }
                        }
                        out.push(hash);
                        out.push(TokenTree::Group(g));
                    }
                    cases.push(Case { name, cfgs });
                }
                _ => {
                    for (hash, g) in attrs.drain(..) {
                        out.push(hash);
                        out.push(TokenTree::Group(g));
                    }
                }
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    // Attributes with no item after them: left for the compiler to report.
    for (hash, g) in attrs {
        out.push(hash);
        out.push(TokenTree::Group(g));
    }
    (out, cases)
}

/// `assert!` and `assert_eq!` as KUnit's: the forms 7.3's take, and nothing else.
const SHADOWED_ASSERTS: &str = "
    #[allow(unused_macros)]
    macro_rules! assert {
        ($cond:expr $(,)?) => {{
            kernel::__kunit_assert!($cond);
        }};
    }
    #[allow(unused_macros)]
    macro_rules! assert_eq {
        ($left:expr, $right:expr $(,)?) => {{
            kernel::__kunit_assert_eq!($left, $right);
        }};
    }
";

/// Whether the attribute `#[...]` whose brackets are `g` is the one whose path is the
/// single identifier `name` (`#[test]`, `#[cfg(...)]`).
fn attr_is(g: &Group, name: &str) -> bool {
    let mut tokens = g.stream().into_iter();
    matches!(tokens.next(), Some(TokenTree::Ident(i)) if i.to_string() == name)
        && !matches!(tokens.next(), Some(TokenTree::Punct(p)) if p.as_char() == ':')
}

/// The condition of `#[cfg(condition)]`, or `None` if the attribute has another form.
fn cfg_condition(g: &Group) -> Option<TokenStream> {
    let mut tokens = g.stream().into_iter().skip(1);
    match (tokens.next(), tokens.next()) {
        (Some(TokenTree::Group(cond)), None) if cond.delimiter() == Delimiter::Parenthesis => {
            Some(cond.stream())
        }
        _ => None,
    }
}

/// The name of the function item that `tokens` begin with (after its attributes), or
/// `None` if they begin another item.
fn fn_name(tokens: &[TokenTree]) -> Option<Ident> {
    let mut tokens = tokens.iter().peekable();
    if matches!(tokens.peek(), Some(TokenTree::Ident(i)) if i.to_string() == "pub") {
        tokens.next();
        if matches!(tokens.peek(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
        {
            tokens.next();
        }
    }
    loop {
        match tokens.next()? {
            TokenTree::Ident(i) => match i.to_string().as_str() {
                "const" | "async" | "unsafe" | "safe" | "extern" | "default" => {}
                "fn" => {
                    return match tokens.next()? {
                        TokenTree::Ident(name) => Some(name.clone()),
                        _ => None,
                    };
                }
                _ => return None,
            },
            // The ABI of `extern "C" fn`.
            TokenTree::Literal(_) => {}
            _ => return None,
        }
    }
}

/// `kunit_rust_wrapper_<case>`, which runs `case`, and its twin that reports the case
/// skipped when the case's `#[cfg]`s are false. The tokens carry the span of the case's
/// name, so that a failure names the case's line.
fn wrapper(case: &Case) -> Vec<TokenTree> {
    let name = case.name.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let run = format!(
        "fn kunit_rust_wrapper_{name}() -> ::kernel::kunit::Status {{ \
             ::kernel::__kunit_case!({}) \
         }}",
        case.name
    );
    let code = match &case.cfgs {
        Some(cfgs) if !cfgs.is_empty() => {
            let all = cfgs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "#[cfg_attr(test, test)] #[cfg(all({all}))] {run} \
                 #[cfg_attr(test, test)] #[cfg_attr(test, ignore)] #[cfg(not(all({all})))] \
                 fn kunit_rust_wrapper_{name}() -> ::kernel::kunit::Status {{ \
                     ::kernel::kunit::Status::Skipped \
                 }}"
            )
        }
        _ => format!("#[cfg_attr(test, test)] {run}"),
    };
    respan(parse(&code), case.name.span())
}

/// Gives `tokens`, and every token inside them, the span `span`.
fn respan(tokens: Vec<TokenTree>, span: Span) -> Vec<TokenTree> {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let inner = respan(g.stream().into_iter().collect(), span);
                let mut group = Group::new(g.delimiter(), inner.into_iter().collect());
                group.set_span(span);
                return TokenTree::Group(group);
            }
            tt.set_span(span);
            tt
        })
        .collect()
}

/// `TEST_CASES`, every case's wrapper under the case's name, and the suite of them
/// through the `kernel` crate's `__kunit_suite!`.
fn suite_decl(suite: &str, cases: &[Case]) -> Vec<TokenTree> {
    let entries: String = cases
        .iter()
        .map(|case| {
            let name = case.name.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name);
            format!("::kernel::kunit::Case {{ name: {name:?}, run: kunit_rust_wrapper_{name} }}, ")
        })
        .collect();
    parse(&format!(
        "static TEST_CASES: [::kernel::kunit::Case; {}] = [{entries}]; \
         ::kernel::__kunit_suite!({suite}, TEST_CASES);",
        cases.len()
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
