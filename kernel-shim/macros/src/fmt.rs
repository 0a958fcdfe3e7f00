// SPDX-License-Identifier: GPL-2.0

//! `fmt!`: `core::format_args!` with each argument behind `kernel::fmt::Adapter`, as Linux
//! 7.3's is, so that `{}` asks for `kernel::fmt::Display` and not `core`'s.
//!
//! The arguments are split at the commas outside any group (a turbofish with two
//! parameters at the top of an argument would be split too, as 7.3's is). A name the
//! string captures (`{count}`, `{count:x}`) that no `name = value` argument gives is
//! added as one, so it is adapted too.

use proc_macro::{
    Delimiter,
    Group,
    Ident,
    Punct,
    Spacing,
    Span,
    TokenStream,
    TokenTree, //
};

/// Returns the names a format string captures: `{name}` and `{name:spec}`, not `{0}`,
/// `{}` or the escaped `{{`.
fn captured(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let Some(close) = rest.find('}') else {
            break;
        };
        let inside = &rest[..close];
        rest = &rest[close + 1..];
        let name = inside.split(':').next().unwrap_or_default().trim();
        let is_ident = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if is_ident && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// Returns `::kernel::fmt::Adapter(&(expr))`.
fn adapted(expr: TokenStream, span: Span) -> TokenStream {
    let path = ["kernel", "fmt", "Adapter"];
    let mut out = TokenStream::new();
    for segment in path {
        out.extend([
            TokenTree::Punct(Punct::new(':', Spacing::Joint)),
            TokenTree::Punct(Punct::new(':', Spacing::Alone)),
            TokenTree::Ident(Ident::new(segment, span)),
        ]);
    }
    let reference = TokenStream::from_iter([
        TokenTree::Punct(Punct::new('&', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, expr)),
    ]);
    out.extend([TokenTree::Group(Group::new(
        Delimiter::Parenthesis,
        reference,
    ))]);
    out
}

/// Returns the name of a `name = value` argument, and its value; `None` for a positional
/// one.
fn named(arg: &[TokenTree]) -> Option<(Ident, TokenStream)> {
    match arg {
        [TokenTree::Ident(name), TokenTree::Punct(eq), value @ ..]
            if eq.as_char() == '=' && eq.spacing() == Spacing::Alone =>
        {
            Some((name.clone(), value.iter().cloned().collect()))
        }
        _ => None,
    }
}

pub(crate) fn fmt(input: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = input.into_iter().collect();
    let text = match tokens.first() {
        Some(TokenTree::Literal(lit)) => lit.to_string(),
        _ => String::new(),
    };
    let Some(text) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        // Not a plain string literal: `format_args!` says what is wrong with it.
        return format_args(tokens.into_iter().collect());
    };
    let span = tokens[0].span();
    let mut names = captured(text);
    let mut out = TokenStream::from_iter([tokens[0].clone()]);
    for arg in tokens[1..].split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
        if arg.is_empty() {
            continue;
        }
        out.extend([TokenTree::Punct(Punct::new(',', Spacing::Alone))]);
        match named(arg) {
            Some((name, value)) => {
                names.retain(|n| *n != name.to_string());
                out.extend([
                    TokenTree::Ident(name),
                    TokenTree::Punct(Punct::new('=', Spacing::Alone)),
                ]);
                out.extend(adapted(value, span));
            }
            None => out.extend(adapted(arg.iter().cloned().collect(), span)),
        }
    }
    for name in names {
        let name = Ident::new(&name, span);
        out.extend([
            TokenTree::Punct(Punct::new(',', Spacing::Alone)),
            TokenTree::Ident(name.clone()),
            TokenTree::Punct(Punct::new('=', Spacing::Alone)),
        ]);
        out.extend(adapted(TokenTree::Ident(name).into(), span));
    }
    format_args(out)
}

/// Returns `::core::format_args!(args)`.
fn format_args(args: TokenStream) -> TokenStream {
    let span = Span::call_site();
    TokenStream::from_iter([
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        TokenTree::Punct(Punct::new(':', Spacing::Alone)),
        TokenTree::Ident(Ident::new("core", span)),
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        TokenTree::Punct(Punct::new(':', Spacing::Alone)),
        TokenTree::Ident(Ident::new("format_args", span)),
        TokenTree::Punct(Punct::new('!', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, args)),
    ])
}
