// SPDX-License-Identifier: GPL-2.0

//! `fmt!`: `core::format_args!` with each argument behind `kernel::fmt::Adapter`, as Linux
//! 7.3's is, so that `{}` asks for `kernel::fmt::Display` and not `core`'s.
//!
//! The arguments are split at the commas outside any group (a turbofish with two
//! parameters at the top of an argument would be split too, as 7.3's is). A name the
//! string captures (`{count}`, `{count:x}`) that no `name = value` argument gives is
//! added as one, so it is adapted too. As in 7.3, a width or precision given as an
//! argument (`{:1$}`, `{:.*}`) is adapted like the rest and so refused: write the number
//! into the string, or capture a name (`{:width$}`).

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
        // `n = -1` and `n=-1` alike; `n == m` is a positional comparison.
        [TokenTree::Ident(name), TokenTree::Punct(eq), value @ ..]
            if eq.as_char() == '='
                && !matches!(value.first(), Some(TokenTree::Punct(p)) if p.as_char() == '=') =>
        {
            Some((name.clone(), value.iter().cloned().collect()))
        }
        _ => None,
    }
}

/// Returns the text of a string literal as written, `"…"` or `r#"…"#`; `None` for
/// another token.
fn literal_text(token: &TokenTree) -> Option<String> {
    let TokenTree::Literal(lit) = token else {
        return None;
    };
    let lit = lit.to_string();
    let raw = lit.strip_prefix('r').map(|r| r.trim_matches('#'));
    let quoted = raw.unwrap_or(&lit);
    let text = quoted.strip_prefix('"')?.strip_suffix('"')?;
    // `\u{e9}` is a character, not a capture.
    Some(match raw {
        Some(_) => text.to_string(),
        None => strip_unicode_escapes(text),
    })
}

/// Returns `text` without its `\u{…}` escapes.
fn strip_unicode_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\\u{") {
        out.push_str(&rest[..at]);
        rest = rest[at..].split_once('}').map_or("", |(_, after)| after);
    }
    out + rest
}

pub(crate) fn fmt(input: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = input.into_iter().collect();
    let mut parts = tokens.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','));
    let string = parts.next().unwrap_or_default();
    let span = string.first().map_or_else(Span::call_site, TokenTree::span);
    // A format string that is not one literal (`concat!(…)`) captures nothing here; the
    // arguments are adapted all the same.
    let mut names = match string {
        [one] => literal_text(one).map_or_else(Vec::new, |text| captured(&text)),
        _ => Vec::new(),
    };
    let mut out = TokenStream::from_iter(string.iter().cloned());
    for arg in parts {
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
