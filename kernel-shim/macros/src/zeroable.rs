// SPDX-License-Identifier: GPL-2.0

//! `#[derive(Zeroable)]`, as Linux 7.3's `pin_init` derives it: for a struct with named
//! fields, a tuple struct, a unit struct or a union, an `unsafe impl Zeroable` with
//! `Zeroable` added to every type parameter's bounds, and a check that every field's type
//! is `Zeroable`. (crates.io's `pinned-init` 0.0.10 derives it for named fields only.)

use proc_macro::{
    Delimiter,
    Spacing,
    Span,
    TokenStream,
    TokenTree, //
};

use crate::paste::compile_error;

/// The path of the trait in the expansion: the crate using the derive depends on
/// `pinned-init`, as it does for `#[pin_data]` (7.3: `::pin_init::Zeroable`).
const TRAIT: &str = "::pinned_init::Zeroable";

type Failure = (String, Span);

/// A failure at no particular token.
fn failure(message: &str) -> Failure {
    (format!("derive(Zeroable): {message}"), Span::call_site())
}

/// Expands `#[derive(Zeroable)]` on `input`.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(out) => out,
        Err((message, span)) => compile_error(&message, span),
    }
}

/// The parts of a struct or union declaration the expansion needs.
struct Item {
    name: TokenTree,
    /// The generic parameters as declared, without the angle brackets.
    params: Vec<TokenTree>,
    /// The `where` clause's predicates, without `where`.
    predicates: Vec<TokenTree>,
    /// Each field's type.
    field_types: Vec<Vec<TokenTree>>,
}

fn expand(input: TokenStream) -> Result<TokenStream, Failure> {
    let item = parse(input)?;
    let (impl_generics, ty_generics) = split_generics(&item.params)?;
    let name = item.name.to_string();
    let predicates = tokens_to_string(&item.predicates);
    let checks: String = item
        .field_types
        .iter()
        .map(|ty| format!("assert_zeroable::<{}>();", tokens_to_string(ty)))
        .collect();
    let out = format!(
        "// SAFETY: Every field type implements `Zeroable` (checked below) and padding bytes \
         may be zero, so all-zero bytes are a value of the type.\n\
         #[automatically_derived]\n\
         unsafe impl<{impl_generics}> {TRAIT} for {name}<{ty_generics}> where {predicates} {{}}\n\
         const _: () = {{\n\
             fn assert_zeroable<T: ?::core::marker::Sized + {TRAIT}>() {{}}\n\
             #[allow(dead_code)]\n\
             fn ensure_zeroable<{impl_generics}>() where {predicates} {{ {checks} }}\n\
         }};"
    );
    out.parse().map_err(|_| failure("cannot expand this item"))
}

fn tokens_to_string(tokens: &[TokenTree]) -> String {
    tokens.iter().cloned().collect::<TokenStream>().to_string()
}

fn is_punct(tt: Option<&TokenTree>, c: char) -> bool {
    matches!(tt, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

fn is_ident(tt: Option<&TokenTree>, name: &str) -> bool {
    matches!(tt, Some(TokenTree::Ident(i)) if i.to_string() == name)
}

/// Skips outer attributes (`#[...]`) and a visibility (`pub`, `pub(...)`) at `tokens[*i]`.
fn skip_attributes_and_visibility(tokens: &[TokenTree], i: &mut usize) {
    loop {
        if is_punct(tokens.get(*i), '#')
            && matches!(tokens.get(*i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket)
        {
            *i += 2;
        } else {
            break;
        }
    }
    if is_ident(tokens.get(*i), "pub") {
        *i += 1;
        if matches!(tokens.get(*i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
        {
            *i += 1;
        }
    }
}

/// Splits `tokens` at the commas outside angle brackets (`->` does not close one).
fn split_top_level_commas(tokens: &[TokenTree]) -> Vec<Vec<TokenTree>> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0usize;
    let mut after_minus = false;
    for tt in tokens {
        let mut minus = false;
        if let TokenTree::Punct(p) = tt {
            match p.as_char() {
                '<' => depth += 1,
                '>' if !after_minus => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(Vec::new());
                    continue;
                }
                '-' => minus = p.spacing() == Spacing::Joint,
                _ => {}
            }
        }
        after_minus = minus;
        // PANIC: `parts` starts with one element and only grows.
        parts.last_mut().unwrap().push(tt.clone());
    }
    if parts.last().is_some_and(Vec::is_empty) {
        parts.pop();
    }
    parts
}

fn parse(input: TokenStream) -> Result<Item, Failure> {
    let tokens: Vec<TokenTree> = input.into_iter().collect();
    let mut i = 0;
    skip_attributes_and_visibility(&tokens, &mut i);
    let keyword = tokens.get(i).cloned();
    let is_union = is_ident(keyword.as_ref(), "union");
    if !is_union && !is_ident(keyword.as_ref(), "struct") {
        let span = keyword.map_or_else(Span::call_site, |tt| tt.span());
        return Err(("cannot derive `Zeroable` for an enum".into(), span));
    }
    i += 1;
    let name = tokens.get(i).cloned().ok_or_else(|| failure("no name"))?;
    i += 1;

    let mut params = Vec::new();
    if is_punct(tokens.get(i), '<') {
        i += 1;
        let mut depth = 1usize;
        let mut after_minus = false;
        while let Some(tt) = tokens.get(i) {
            i += 1;
            let mut minus = false;
            if let TokenTree::Punct(p) = tt {
                match p.as_char() {
                    '<' => depth += 1,
                    '>' if !after_minus => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    '-' => minus = p.spacing() == Spacing::Joint,
                    _ => {}
                }
            }
            after_minus = minus;
            params.push(tt.clone());
        }
    }

    // What follows: `where ... { fields }`, `( fields ) where ... ;`, `;` or
    // `where ... ;`.
    let mut predicates = Vec::new();
    let mut body = None;
    let mut in_where = false;
    while let Some(tt) = tokens.get(i) {
        i += 1;
        match tt {
            TokenTree::Ident(id) if id.to_string() == "where" => in_where = true,
            TokenTree::Group(g)
                if body.is_none()
                    && (g.delimiter() == Delimiter::Brace
                        || (g.delimiter() == Delimiter::Parenthesis && !in_where)) =>
            {
                body = Some(g.clone());
                in_where = false;
            }
            TokenTree::Punct(p) if p.as_char() == ';' => break,
            other if in_where => predicates.push(other.clone()),
            _ => {}
        }
    }
    if !predicates.is_empty() && !is_punct(predicates.last(), ',') {
        predicates.push(TokenTree::Punct(proc_macro::Punct::new(
            ',',
            Spacing::Alone,
        )));
    }

    let mut field_types = Vec::new();
    if let Some(body) = body {
        let named = body.delimiter() == Delimiter::Brace;
        let inner: Vec<TokenTree> = body.stream().into_iter().collect();
        for field in split_top_level_commas(&inner) {
            let mut j = 0;
            skip_attributes_and_visibility(&field, &mut j);
            if named {
                // `name: Type`.
                if !is_punct(field.get(j + 1), ':') {
                    let span = field.get(j).map_or_else(Span::call_site, |tt| tt.span());
                    return Err(("derive(Zeroable): expected `name: Type`".into(), span));
                }
                j += 2;
            }
            field_types.push(field[j..].to_vec());
        }
    }
    Ok(Item {
        name,
        params,
        predicates,
        field_types,
    })
}

/// The generics of the `impl` (every type parameter bounded by `Zeroable`, defaults
/// dropped) and of the type (the parameters' names), both without angle brackets.
fn split_generics(params: &[TokenTree]) -> Result<(String, String), Failure> {
    let mut impl_generics = Vec::new();
    let mut ty_generics = Vec::new();
    for param in split_top_level_commas(params) {
        // Drop a default (`= ...` outside angle brackets).
        let mut depth = 0usize;
        let end = param
            .iter()
            .position(|tt| {
                if let TokenTree::Punct(p) = tt {
                    match p.as_char() {
                        '<' => depth += 1,
                        '>' => depth = depth.saturating_sub(1),
                        '=' if depth == 0 => return true,
                        _ => {}
                    }
                }
                false
            })
            .unwrap_or(param.len());
        let param = &param[..end];
        let text = tokens_to_string(param);
        if is_punct(param.first(), '\'') {
            // A lifetime: `'a` or `'a: 'b`.
            impl_generics.push(text);
            ty_generics.push(tokens_to_string(&param[..2.min(param.len())]));
        } else if is_ident(param.first(), "const") {
            // `const N: Type`.
            let name = param.get(1).ok_or_else(|| failure("bad const parameter"))?;
            impl_generics.push(text);
            ty_generics.push(name.to_string());
        } else {
            // A type parameter: `T` or `T: Bounds`.
            let name = param.first().ok_or_else(|| failure("empty parameter"))?;
            let bounds = if is_punct(param.get(1), ':') {
                format!(" + {}", tokens_to_string(&param[2..]))
            } else {
                String::new()
            };
            impl_generics.push(format!("{name}: {TRAIT}{bounds}"));
            ty_generics.push(name.to_string());
        }
    }
    Ok((impl_generics.join(", "), ty_generics.join(", ")))
}
