// SPDX-License-Identifier: GPL-2.0

//! `paste!`: identifiers glued together from pieces, for `macro_rules!` macros that
//! name the items they generate after their input (`register!`'s `with_<field>`).
//!
//! Host only: a kernel tree's `macros` crate has a `paste!` of its own with the same
//! syntax, which `kernel::macros::paste!` names there.

use proc_macro::{
    Delimiter,
    Group,
    Ident,
    Span,
    TokenStream,
    TokenTree, //
};

/// Expands `paste! { ... }`: every `[< piece piece ... >]` becomes one identifier.
pub(crate) fn paste(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(out) => out,
        Err((message, span)) => compile_error(&message, span),
    }
}

type Failure = (String, Span);

fn expand(input: TokenStream) -> Result<TokenStream, Failure> {
    let mut out = Vec::new();
    for tt in input {
        match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket && is_paste(&g) => {
                out.push(TokenTree::Ident(glue(&g)?));
            }
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), expand(g.stream())?);
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            other => out.push(other),
        }
    }
    Ok(out.into_iter().collect())
}

/// Whether a bracketed group is `[< ... >]`.
fn is_paste(group: &Group) -> bool {
    let tokens: Vec<TokenTree> = group.stream().into_iter().collect();
    let is_punct = |tt: Option<&TokenTree>, c: char| matches!(tt, Some(TokenTree::Punct(p)) if p.as_char() == c);
    tokens.len() >= 3 && is_punct(tokens.first(), '<') && is_punct(tokens.last(), '>')
}

/// The tokens of `stream` with the invisible groups that `macro_rules!` wraps around
/// forwarded fragments (`$x:literal`, `$x:ty`) opened.
fn flatten(stream: TokenStream, out: &mut Vec<TokenTree>) {
    for tt in stream {
        match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::None => {
                flatten(g.stream(), out);
            }
            other => out.push(other),
        }
    }
}

/// Glues the pieces of `[< ... >]` into one identifier, applying each piece's
/// `:upper`/`:lower` modifiers; the identifier has the group's span.
fn glue(group: &Group) -> Result<Ident, Failure> {
    let mut tokens = Vec::new();
    flatten(group.stream(), &mut tokens);
    // PANIC: `is_paste` saw at least the opening `<` and the closing `>`.
    let inner = &tokens[1..tokens.len() - 1];

    let mut name = String::new();
    let mut i = 0;
    while i < inner.len() {
        let mut piece = match &inner[i] {
            TokenTree::Ident(ident) => {
                let text = ident.to_string();
                text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
            }
            TokenTree::Literal(literal) => literal.to_string().trim_matches('"').to_owned(),
            other => {
                return Err((
                    format!("paste!: `{other}` cannot be part of an identifier"),
                    other.span(),
                ))
            }
        };
        i += 1;
        while let (Some(TokenTree::Punct(colon)), Some(TokenTree::Ident(modifier))) =
            (inner.get(i), inner.get(i + 1))
        {
            if colon.as_char() != ':' {
                break;
            }
            piece = match modifier.to_string().as_str() {
                "upper" => piece.to_uppercase(),
                "lower" => piece.to_lowercase(),
                other => {
                    return Err((
                        format!("paste!: unknown modifier `{other}` (upper, lower)"),
                        modifier.span(),
                    ))
                }
            };
            i += 2;
        }
        name.push_str(&piece);
    }

    let valid_start = name
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_alphabetic());
    if !valid_start || !name.chars().all(|c| c == '_' || c.is_alphanumeric()) {
        return Err((
            format!("paste!: `{name}` is not an identifier"),
            group.span(),
        ));
    }
    Ok(Ident::new(&name, group.span()))
}

pub(crate) fn compile_error(message: &str, span: Span) -> TokenStream {
    let tokens: TokenStream = format!("::core::compile_error!({message:?});")
        .parse()
        .unwrap_or_default();
    tokens
        .into_iter()
        .map(|mut tt| {
            tt.set_span(span);
            tt
        })
        .collect()
}
