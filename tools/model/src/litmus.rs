// SPDX-License-Identifier: GPL-2.0

//! The kernel's litmus tests, decided by the contract checker ([`crate::contract`]).
//!
//! Reads C litmus tests as Linux's memory model writes them (`tools/memory-model`,
//! `Documentation/litmus-tests`): a `C NAME` line, comments `(* ... *)` (the `Result:`
//! line among them), an initial state `{ ... }`, one function per CPU `P0(int *x, ...)`,
//! optionally `locations [...]`, and an `exists (...)` clause over registers (`0:r1`) and
//! final values (`x`). Then enumerates every candidate execution (each load's value, what
//! it reads from, each location's coherence order), keeps those [`contract::consistent`]
//! allows, and prints herd7's own line: `Observation NAME Never|Sometimes|Always P N`,
//! `P` and `N` counting the distinct final states (of the variables the clause and
//! `locations` name) that satisfy the clause and that do not.
//!
//! # The subset
//!
//! Accesses: `READ_ONCE`/`WRITE_ONCE`, plain `*x` loads and stores, `smp_load_acquire`,
//! `smp_store_release`. Barriers: `smp_mb`, `smp_rmb`, `smp_wmb`, taken as
//! `dma_mb(Full)`, `dma_mb(Read)`, `dma_mb(Write)` (LKMM has no DMA barriers; reading the
//! CPU barriers as these compares like with like). Locks: `spin_lock`/`spin_unlock`, as
//! the contract models the driver's locks (mutual exclusion; a lock hands over what its
//! holder saw; an unlock and a lock on one CPU order nothing by themselves). Control:
//! `if`/`else` on expressions of registers, constants and loads (`==`, `!=`, `!`, `&&`,
//! `||`, `+`, `-`), which the contract does *not* honour as a dependency. Registers are
//! declared `int r;` or `int r = ...;`. Anything else (atomics, `xchg`, `cmpxchg`, RCU,
//! `smp_mb__after_*`, pointers as values, `~exists`, `filter`) is refused with the
//! construct named.

use std::{
    collections::{
        BTreeMap,
        BTreeSet,
        HashMap, //
    },
    fmt,
    string::{
        String,
        ToString, //
    },
    vec::Vec,
};

use crate::contract::{
    self,
    Event,
    Execution,
    Flavour,
    Op, //
};

/// What a test is said, or found, to allow of its `exists` clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No allowed execution satisfies it.
    Never,
    /// Some do, some do not.
    Sometimes,
    /// Every allowed execution does.
    Always,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Never => "Never",
            Self::Sometimes => "Sometimes",
            Self::Always => "Always",
        })
    }
}

/// An expression of a thread, or of the `exists` clause.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Const(i64),
    Reg(String),
    /// A load of the location (a plain `*x`, `READ_ONCE(*x)` or, with `acquire`,
    /// `smp_load_acquire(x)`).
    Load(String, bool),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinOp {
    Eq,
    Ne,
    And,
    Or,
    Add,
    Sub,
}

/// A statement of a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stmt {
    /// `reg = expr` (a declaration with a value included).
    Assign(String, Expr),
    /// A store of `expr` to the location, with release semantics if `release`.
    Store(String, Expr, bool),
    Fence(Flavour),
    Lock(String),
    Unlock(String),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
}

/// A proposition of the `exists` clause.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Prop {
    /// `thread:reg = value` or `location = value`.
    Is(Var, i64),
    Not(Box<Prop>),
    And(Box<Prop>, Box<Prop>),
    Or(Box<Prop>, Box<Prop>),
    True,
}

/// A variable of the final state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Var {
    Reg(usize, String),
    Loc(String),
}

/// A parsed litmus test.
#[derive(Clone, Debug)]
pub struct Test {
    /// Its name (the `C NAME` line).
    pub name: String,
    /// What its `Result:` comment says, if it has one.
    pub result: Option<Verdict>,
    init: BTreeMap<String, i64>,
    locks: BTreeSet<String>,
    threads: Vec<Vec<Stmt>>,
    observed: Vec<Var>,
    exists: Prop,
}

/// Why a test was not decided: outside the subset, or malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(what: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(what.into()))
}

/// The tokens of a test's C part.
struct Lexer {
    toks: Vec<String>,
    at: usize,
}

impl Lexer {
    fn new(text: &str) -> Self {
        let mut toks = Vec::new();
        let b: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_whitespace() {
                i += 1;
            } else if c.is_ascii_alphanumeric() || c == '_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
                toks.push(b[s..i].iter().collect());
            } else {
                let two: String = b[i..(i + 2).min(b.len())].iter().collect();
                if ["==", "!=", "&&", "||", "/\\", "\\/"].contains(&two.as_str()) {
                    toks.push(two);
                    i += 2;
                } else {
                    toks.push(c.to_string());
                    i += 1;
                }
            }
        }
        Self { toks, at: 0 }
    }

    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Result<String, Refused> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t.map_or_else(|| refuse("unexpected end of the test"), Ok)
    }

    fn eat(&mut self, t: &str) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, t: &str) -> Result<(), Refused> {
        match self.next()? {
            got if got == t => Ok(()),
            got => refuse(format!("expected `{t}`, found `{got}`")),
        }
    }

    fn ident(&mut self) -> Result<String, Refused> {
        let t = self.next()?;
        match t.chars().next() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => Ok(t),
            _ => refuse(format!("expected a name, found `{t}`")),
        }
    }
}

/// Removes comments: `/* ... */` and `// ...` anywhere, `(* ... *)` outside braces (in
/// C code, `(*` is a dereference in parentheses, as in `READ_ONCE(*x)`).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let close = if rest.starts_with("/*") {
            Some("*/")
        } else if rest.starts_with("//") {
            Some("\n")
        } else if depth == 0 && rest.starts_with("(*") {
            Some("*)")
        } else {
            None
        };
        if let Some(close) = close {
            let after = &rest[2..];
            out.push(' ');
            rest = after
                .find(close)
                .map_or("", |end| &after[end + close.len()..]);
            if close == "\n" {
                out.push('\n');
            }
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

impl Test {
    /// Parses a litmus test.
    ///
    /// # Errors
    ///
    /// [`Refused`], naming the construct, if the test is outside the subset or malformed.
    pub fn parse(text: &str) -> Result<Self, Refused> {
        let result = text.lines().find_map(|l| {
            let l = l.trim_start_matches([' ', '*', '(']).trim();
            let v = l.strip_prefix("Result:")?.trim();
            match v.split_whitespace().next()? {
                "Never" => Some(Verdict::Never),
                "Sometimes" => Some(Verdict::Sometimes),
                "Always" => Some(Verdict::Always),
                _ => None,
            }
        });
        let body = strip_comments(text);
        let mut lines = body.lines().filter(|l| !l.trim().is_empty());
        let head = lines.next().unwrap_or_default().trim();
        let name = match head.strip_prefix("C ") {
            Some(n) => n.trim().to_string(),
            None => return refuse(format!("not a C litmus test (first line `{head}`)")),
        };
        let rest = &body[body.find(head).unwrap_or(0) + head.len()..];
        let mut lx = Lexer::new(rest);
        let mut test = Self {
            name,
            result,
            init: BTreeMap::new(),
            locks: BTreeSet::new(),
            threads: Vec::new(),
            observed: Vec::new(),
            exists: Prop::True,
        };
        test.parse_init(&mut lx)?;
        while let Some(t) = lx.peek() {
            match t {
                p if p.starts_with('P') && p[1..].parse::<usize>().is_ok() => {
                    test.parse_thread(&mut lx)?
                }
                "locations" => test.parse_locations(&mut lx)?,
                "exists" => {
                    lx.next()?;
                    test.exists = parse_prop(&mut lx)?;
                    if let Some(t) = lx.peek() {
                        return refuse(format!("`{t}` after the exists clause"));
                    }
                }
                "~" | "forall" | "filter" => {
                    return refuse(format!("`{t}` clause (only `exists` is read)"))
                }
                other => return refuse(format!("`{other}` at top level")),
            }
        }
        if test.threads.is_empty() {
            return refuse("no thread");
        }
        if test.exists == Prop::True {
            return refuse("no exists clause");
        }
        let mut observed = Vec::new();
        test.exists.vars(&mut observed);
        for v in core::mem::take(&mut test.observed) {
            if !observed.contains(&v) {
                observed.push(v);
            }
        }
        test.observed = observed;
        Ok(test)
    }

    fn parse_init(&mut self, lx: &mut Lexer) -> Result<(), Refused> {
        lx.expect("{")?;
        while !lx.eat("}") {
            let mut name = lx.ident()?;
            if is_ident(lx.peek().unwrap_or_default()) {
                if name != "int" {
                    return refuse(format!("`{name}` in the initial state"));
                }
                name = lx.ident()?;
            }
            if name == "int" && lx.peek() == Some("*") {
                return refuse("a pointer in the initial state");
            }
            let value = match lx.eat("=") {
                true => match lx.next()? {
                    n if n.chars().all(|c| c.is_ascii_digit()) => parse_number(&n)?,
                    other => {
                        return refuse(format!("`{name}={other}` in the initial state (a pointer)"))
                    }
                },
                false => 0,
            };
            self.init.insert(name, value);
            if !lx.eat(";") && lx.peek() != Some("}") {
                return refuse(format!("`{}` in the initial state", lx.next()?));
            }
        }
        Ok(())
    }

    fn parse_locations(&mut self, lx: &mut Lexer) -> Result<(), Refused> {
        lx.next()?;
        lx.expect("[")?;
        while !lx.eat("]") {
            self.observed.push(parse_var(lx)?);
            lx.eat(";");
        }
        Ok(())
    }

    fn parse_thread(&mut self, lx: &mut Lexer) -> Result<(), Refused> {
        let name = lx.next()?;
        let index: usize = name[1..]
            .parse()
            .map_err(|_| Refused(format!("thread `{name}`")))?;
        if index != self.threads.len() {
            return refuse(format!("thread `{name}` out of order"));
        }
        lx.expect("(")?;
        while !lx.eat(")") {
            let ty = lx.ident()?;
            lx.expect("*")?;
            let param = lx.ident()?;
            match ty.as_str() {
                "int" => {
                    self.init.entry(param).or_insert(0);
                }
                "spinlock_t" => {
                    self.locks.insert(param);
                }
                other => return refuse(format!("a parameter of type `{other}`")),
            }
            lx.eat(",");
        }
        lx.expect("{")?;
        let body = self.parse_block_body(lx)?;
        self.threads.push(body);
        Ok(())
    }

    /// Statements up to and including the closing `}`.
    fn parse_block_body(&self, lx: &mut Lexer) -> Result<Vec<Stmt>, Refused> {
        let mut out = Vec::new();
        while !lx.eat("}") {
            self.parse_stmt(lx, &mut out)?;
        }
        Ok(out)
    }

    /// A statement, or a braced block, appended to `out`.
    fn parse_branch(&self, lx: &mut Lexer) -> Result<Vec<Stmt>, Refused> {
        let mut out = Vec::new();
        if lx.eat("{") {
            return self.parse_block_body(lx);
        }
        self.parse_stmt(lx, &mut out)?;
        Ok(out)
    }

    fn parse_stmt(&self, lx: &mut Lexer, out: &mut Vec<Stmt>) -> Result<(), Refused> {
        let t = lx.next()?;
        match t.as_str() {
            ";" => {}
            "int" => {
                let reg = lx.ident()?;
                if lx.eat("=") {
                    let e = self.parse_expr(lx)?;
                    out.push(Stmt::Assign(reg, e));
                }
                lx.expect(";")?;
            }
            "WRITE_ONCE" => {
                lx.expect("(")?;
                lx.expect("*")?;
                let loc = self.location(lx)?;
                lx.expect(",")?;
                let e = self.parse_expr(lx)?;
                lx.expect(")")?;
                lx.expect(";")?;
                out.push(Stmt::Store(loc, e, false));
            }
            "smp_store_release" => {
                lx.expect("(")?;
                let loc = self.location(lx)?;
                lx.expect(",")?;
                let e = self.parse_expr(lx)?;
                lx.expect(")")?;
                lx.expect(";")?;
                out.push(Stmt::Store(loc, e, true));
            }
            "smp_mb" | "smp_rmb" | "smp_wmb" => {
                lx.expect("(")?;
                lx.expect(")")?;
                lx.expect(";")?;
                out.push(Stmt::Fence(match t.as_str() {
                    "smp_mb" => Flavour::Full,
                    "smp_rmb" => Flavour::Read,
                    _ => Flavour::Write,
                }));
            }
            "spin_lock" | "spin_unlock" => {
                lx.expect("(")?;
                let lock = lx.ident()?;
                if !self.locks.contains(&lock) {
                    return refuse(format!("`{t}` of `{lock}`, which is no spinlock_t"));
                }
                lx.expect(")")?;
                lx.expect(";")?;
                out.push(match t.as_str() {
                    "spin_lock" => Stmt::Lock(lock),
                    _ => Stmt::Unlock(lock),
                });
            }
            "if" => {
                lx.expect("(")?;
                let cond = self.parse_expr(lx)?;
                lx.expect(")")?;
                let then = self.parse_branch(lx)?;
                let els = match lx.eat("else") {
                    true => self.parse_branch(lx)?,
                    false => Vec::new(),
                };
                out.push(Stmt::If(cond, then, els));
            }
            "*" => {
                let loc = self.location(lx)?;
                lx.expect("=")?;
                let e = self.parse_expr(lx)?;
                lx.expect(";")?;
                out.push(Stmt::Store(loc, e, false));
            }
            reg if lx.peek() == Some("=") && is_ident(reg) && !self.init.contains_key(reg) => {
                lx.next()?;
                let e = self.parse_expr(lx)?;
                lx.expect(";")?;
                out.push(Stmt::Assign(reg.to_string(), e));
            }
            other if lx.peek() == Some("(") => {
                return refuse(format!("`{other}()`"));
            }
            other => return refuse(format!("the statement starting `{other}`")),
        }
        Ok(())
    }

    /// A location name (a parameter of type `int *`).
    fn location(&self, lx: &mut Lexer) -> Result<String, Refused> {
        let loc = lx.ident()?;
        if !self.init.contains_key(&loc) {
            return refuse(format!("`{loc}` is no shared location"));
        }
        Ok(loc)
    }

    fn parse_expr(&self, lx: &mut Lexer) -> Result<Expr, Refused> {
        let mut left = self.parse_and(lx)?;
        while lx.eat("||") {
            let right = self.parse_and(lx)?;
            left = Expr::Bin(BinOp::Or, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn parse_and(&self, lx: &mut Lexer) -> Result<Expr, Refused> {
        let mut left = self.parse_cmp(lx)?;
        while lx.eat("&&") {
            let right = self.parse_cmp(lx)?;
            left = Expr::Bin(BinOp::And, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn parse_cmp(&self, lx: &mut Lexer) -> Result<Expr, Refused> {
        let left = self.parse_sum(lx)?;
        let op = match lx.peek() {
            Some("==") => BinOp::Eq,
            Some("!=") => BinOp::Ne,
            _ => return Ok(left),
        };
        lx.next()?;
        let right = self.parse_sum(lx)?;
        Ok(Expr::Bin(op, Box::new(left), Box::new(right)))
    }

    fn parse_sum(&self, lx: &mut Lexer) -> Result<Expr, Refused> {
        let mut left = self.parse_unary(lx)?;
        loop {
            let op = match lx.peek() {
                Some("+") => BinOp::Add,
                Some("-") => BinOp::Sub,
                _ => return Ok(left),
            };
            lx.next()?;
            let right = self.parse_unary(lx)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn parse_unary(&self, lx: &mut Lexer) -> Result<Expr, Refused> {
        let t = lx.next()?;
        match t.as_str() {
            "!" => Ok(Expr::Not(Box::new(self.parse_unary(lx)?))),
            "(" => {
                let e = self.parse_expr(lx)?;
                lx.expect(")")?;
                Ok(e)
            }
            "*" => Ok(Expr::Load(self.location(lx)?, false)),
            "READ_ONCE" => {
                lx.expect("(")?;
                lx.expect("*")?;
                let loc = self.location(lx)?;
                lx.expect(")")?;
                Ok(Expr::Load(loc, false))
            }
            "smp_load_acquire" => {
                lx.expect("(")?;
                let loc = self.location(lx)?;
                lx.expect(")")?;
                Ok(Expr::Load(loc, true))
            }
            n if n.chars().all(|c| c.is_ascii_digit()) => Ok(Expr::Const(parse_number(n)?)),
            name if is_ident(name) && lx.peek() == Some("(") => refuse(format!("`{name}()`")),
            name if is_ident(name) && self.init.contains_key(name) => {
                refuse(format!("`{name}` used as a value (a pointer)"))
            }
            name if is_ident(name) => Ok(Expr::Reg(name.to_string())),
            other => refuse(format!("`{other}` in an expression")),
        }
    }
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

fn parse_number(t: &str) -> Result<i64, Refused> {
    t.parse()
        .map_err(|_| Refused(format!("`{t}` is no number")))
}

fn parse_var(lx: &mut Lexer) -> Result<Var, Refused> {
    let t = lx.next()?;
    if lx.peek() == Some(":") {
        lx.next()?;
        let thread = parse_number(&t)?;
        let reg = lx.ident()?;
        return Ok(Var::Reg(usize::try_from(thread).unwrap_or(usize::MAX), reg));
    }
    if t == "[" {
        let loc = lx.ident()?;
        lx.expect("]")?;
        return Ok(Var::Loc(loc));
    }
    match is_ident(&t) {
        true => Ok(Var::Loc(t)),
        false => refuse(format!("`{t}` in the exists clause")),
    }
}

fn parse_prop(lx: &mut Lexer) -> Result<Prop, Refused> {
    let mut left = parse_prop_and(lx)?;
    while lx.eat("\\/") {
        let right = parse_prop_and(lx)?;
        left = Prop::Or(Box::new(left), Box::new(right));
    }
    Ok(left)
}

fn parse_prop_and(lx: &mut Lexer) -> Result<Prop, Refused> {
    let mut left = parse_prop_atom(lx)?;
    while lx.eat("/\\") {
        let right = parse_prop_atom(lx)?;
        left = Prop::And(Box::new(left), Box::new(right));
    }
    Ok(left)
}

fn parse_prop_atom(lx: &mut Lexer) -> Result<Prop, Refused> {
    if lx.eat("(") {
        let p = parse_prop(lx)?;
        lx.expect(")")?;
        return Ok(p);
    }
    if lx.eat("~") {
        return Ok(Prop::Not(Box::new(parse_prop_atom(lx)?)));
    }
    if lx.peek() == Some("true") {
        lx.next()?;
        return Ok(Prop::True);
    }
    let var = parse_var(lx)?;
    let negated = match lx.next()?.as_str() {
        "=" => false,
        "!=" => true,
        other => return refuse(format!("`{other}` in the exists clause")),
    };
    let value = match lx.peek() {
        Some("-") => {
            lx.next()?;
            -parse_number(&lx.next()?)?
        }
        _ => match lx.next()? {
            n if n.chars().all(|c| c.is_ascii_digit()) => parse_number(&n)?,
            other => {
                return refuse(format!(
                    "`{other}` as a value in the exists clause (a pointer)"
                ))
            }
        },
    };
    let is = Prop::Is(var, value);
    Ok(match negated {
        true => Prop::Not(Box::new(is)),
        false => is,
    })
}

impl Prop {
    fn vars(&self, out: &mut Vec<Var>) {
        match self {
            Self::Is(v, _) => {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            Self::Not(p) => p.vars(out),
            Self::And(a, b) | Self::Or(a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Self::True => {}
        }
    }

    fn holds(&self, state: &BTreeMap<Var, i64>) -> bool {
        match self {
            Self::Is(v, value) => state.get(v) == Some(value),
            Self::Not(p) => !p.holds(state),
            Self::And(a, b) => a.holds(state) && b.holds(state),
            Self::Or(a, b) => a.holds(state) || b.holds(state),
            Self::True => true,
        }
    }
}

/// One way a thread can run: its events (loads with the value they returned) and its
/// registers at the end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Run {
    ops: Vec<Op>,
    regs: BTreeMap<String, i64>,
}

/// Runs of one thread, for every value each load may return (from `domain`).
struct Runner<'a> {
    locs: &'a HashMap<String, u64>,
    domain: &'a HashMap<u64, BTreeSet<i64>>,
    runs: Vec<Run>,
}

/// The most runs of one thread, or executions of one test, tried before giving up.
const MAX_CANDIDATES: usize = 2_000_000;

impl Runner<'_> {
    /// Runs `stmts` from the state `run` on, then `rest` (the statements after the block
    /// being run, innermost first), recording each complete run.
    fn exec(&mut self, stmts: &[Stmt], rest: &mut Vec<Vec<Stmt>>, run: Run) -> Result<(), Refused> {
        let Some((first, tail)) = stmts.split_first() else {
            return match rest.pop() {
                Some(next) => {
                    let r = self.exec(&next, rest, run);
                    rest.push(next);
                    r
                }
                None => {
                    if self.runs.len() >= MAX_CANDIDATES {
                        return refuse("too many runs of one thread");
                    }
                    self.runs.push(run);
                    Ok(())
                }
            };
        };
        rest.push(tail.to_vec());
        let r = self.stmt(first, rest, run);
        rest.pop();
        r
    }

    fn stmt(&mut self, s: &Stmt, rest: &mut Vec<Vec<Stmt>>, run: Run) -> Result<(), Refused> {
        let loc_of = |name: &str| {
            self.locs
                .get(name)
                .copied()
                .ok_or_else(|| Refused(format!("`{name}`")))
        };
        match s {
            Stmt::Assign(reg, e) => {
                for (mut run, v) in self.eval(e, run)? {
                    run.regs.insert(reg.clone(), v);
                    self.exec(&[], rest, run)?;
                }
            }
            Stmt::Store(loc, e, release) => {
                let loc = loc_of(loc)?;
                for (mut run, v) in self.eval(e, run)? {
                    // CAST: the values stored are the test's small integers.
                    let value = v as u64;
                    run.ops.push(match release {
                        true => Op::StoreRelease { loc, value },
                        false => Op::Store { loc, value },
                    });
                    self.exec(&[], rest, run)?;
                }
            }
            Stmt::Fence(f) => {
                let mut run = run;
                run.ops.push(Op::Fence(*f));
                self.exec(&[], rest, run)?;
            }
            Stmt::Lock(l) | Stmt::Unlock(l) => {
                let loc = loc_of(l)?;
                let mut run = run;
                run.ops.push(match s {
                    Stmt::Lock(_) => Op::Acquire { loc, value: 0 },
                    _ => Op::Release { loc, value: 0 },
                });
                self.exec(&[], rest, run)?;
            }
            Stmt::If(cond, then, els) => {
                for (run, v) in self.eval(cond, run)? {
                    let branch = if v != 0 { then } else { els };
                    self.exec(branch, rest, run)?;
                }
            }
        }
        Ok(())
    }

    /// Every way `e` evaluates from `run`: each load in it returns each value of its
    /// location's domain, left to right.
    fn eval(&self, e: &Expr, run: Run) -> Result<Vec<(Run, i64)>, Refused> {
        Ok(match e {
            Expr::Const(c) => vec![(run, *c)],
            // A register not set yet reads 0, as herd7 has it.
            Expr::Reg(r) => {
                let v = run.regs.get(r).copied().unwrap_or(0);
                vec![(run, v)]
            }
            Expr::Load(name, acquire) => {
                let loc = self.locs[name];
                let mut out = Vec::new();
                for &v in &self.domain[&loc] {
                    let mut run = run.clone();
                    // CAST: the values are the test's small integers.
                    let value = v as u64;
                    run.ops.push(match acquire {
                        true => Op::LoadAcquire { loc, value },
                        false => Op::Load { loc, value },
                    });
                    out.push((run, v));
                }
                out
            }
            Expr::Not(a) => self
                .eval(a, run)?
                .into_iter()
                .map(|(r, v)| (r, i64::from(v == 0)))
                .collect(),
            Expr::Bin(op, a, b) => {
                let mut out = Vec::new();
                for (run, x) in self.eval(a, run)? {
                    for (run, y) in self.eval(b, run)? {
                        let v = match op {
                            BinOp::Eq => i64::from(x == y),
                            BinOp::Ne => i64::from(x != y),
                            BinOp::And => i64::from(x != 0 && y != 0),
                            BinOp::Or => i64::from(x != 0 || y != 0),
                            BinOp::Add => x.wrapping_add(y),
                            BinOp::Sub => x.wrapping_sub(y),
                        };
                        out.push((run, v));
                    }
                }
                out
            }
        })
    }
}

/// What deciding a test found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The test's name.
    pub name: String,
    /// Whether allowed executions satisfy the clause never, sometimes or always.
    pub verdict: Verdict,
    /// Distinct final states that satisfy the clause.
    pub positive: usize,
    /// Distinct final states that do not.
    pub negative: usize,
}

impl fmt::Display for Observation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Observation {} {} {} {}",
            self.name, self.verdict, self.positive, self.negative
        )
    }
}

impl Test {
    /// Enumerates the test's executions and decides its clause under the contract.
    ///
    /// # Errors
    ///
    /// [`Refused`] if the test has too many candidate executions to enumerate.
    pub fn decide(&self) -> Result<Observation, Refused> {
        let locs = self.loc_ids();
        let init_of = |loc: u64| -> i64 {
            self.init
                .iter()
                .find(|(n, _)| locs[n.as_str()] == loc)
                .map_or(0, |(_, &v)| v)
        };
        // The values a load may return: the initial value and what the threads store,
        // to a fixpoint (a store may write a value loaded elsewhere).
        let mut domain: HashMap<u64, BTreeSet<i64>> = locs
            .values()
            .map(|&l| (l, BTreeSet::from([init_of(l)])))
            .collect();
        let mut runs: Vec<Vec<Run>>;
        let mut rounds = 0;
        loop {
            runs = Vec::new();
            for t in &self.threads {
                let mut runner = Runner {
                    locs: &locs,
                    domain: &domain,
                    runs: Vec::new(),
                };
                runner.exec(
                    t,
                    &mut Vec::new(),
                    Run {
                        ops: Vec::new(),
                        regs: BTreeMap::new(),
                    },
                )?;
                runs.push(runner.runs);
            }
            let mut grown = false;
            for op in runs.iter().flatten().flat_map(|r| r.ops.iter()) {
                if let Op::Store { loc, value } | Op::StoreRelease { loc, value } = *op {
                    // CAST: back to the test's small integers.
                    grown |= domain.entry(loc).or_default().insert(value as i64);
                }
            }
            rounds += 1;
            // Every value an execution reads comes down a chain of stores, each stored
            // at most once: as many rounds as there are stores find them all.
            if !grown || rounds > self.stores() {
                break;
            }
        }
        let lock_locs: BTreeSet<u64> = self.locks.iter().map(|l| locs[l.as_str()]).collect();
        let mut states: BTreeMap<Vec<(Var, i64)>, bool> = BTreeMap::new();
        let mut tried = 0usize;
        let mut choice = vec![0usize; runs.len()];
        loop {
            let chosen: Vec<&Run> = choice.iter().zip(&runs).map(|(&i, r)| &r[i]).collect();
            self.executions(&chosen, &lock_locs, &init_of, &mut tried, &mut states)?;
            // The next combination of runs.
            let mut k = 0;
            loop {
                if k == choice.len() {
                    return Ok(self.observation(&states));
                }
                choice[k] += 1;
                if choice[k] < runs[k].len() {
                    break;
                }
                choice[k] = 0;
                k += 1;
            }
        }
    }

    /// The number of each location and lock, as the contract's events name them.
    fn loc_ids(&self) -> HashMap<String, u64> {
        let mut locs: HashMap<String, u64> = HashMap::new();
        for name in self.init.keys().chain(self.locks.iter()) {
            let id = u64::try_from(locs.len()).unwrap_or(u64::MAX);
            locs.entry(name.clone()).or_insert(id);
        }
        locs
    }

    /// The number of store statements of all threads.
    fn stores(&self) -> usize {
        fn count(stmts: &[Stmt]) -> usize {
            stmts
                .iter()
                .map(|s| match s {
                    Stmt::Store(..) => 1,
                    Stmt::If(_, a, b) => count(a) + count(b),
                    _ => 0,
                })
                .sum()
        }
        self.threads.iter().map(|t| count(t)).sum()
    }

    fn observation(&self, states: &BTreeMap<Vec<(Var, i64)>, bool>) -> Observation {
        let positive = states.values().filter(|&&s| s).count();
        let negative = states.len() - positive;
        let verdict = match (positive, negative) {
            (0, _) => Verdict::Never,
            (_, 0) => Verdict::Always,
            _ => Verdict::Sometimes,
        };
        Observation {
            name: self.name.clone(),
            verdict,
            positive,
            negative,
        }
    }

    /// Every execution of one combination of thread runs: each load's source, each
    /// location's coherence order; the consistent ones' final states go to `states`.
    fn executions(
        &self,
        chosen: &[&Run],
        lock_locs: &BTreeSet<u64>,
        init_of: &dyn Fn(u64) -> i64,
        tried: &mut usize,
        states: &mut BTreeMap<Vec<(Var, i64)>, bool>,
    ) -> Result<(), Refused> {
        let mut events = Vec::new();
        for (t, run) in chosen.iter().enumerate() {
            for op in &run.ops {
                events.push(Event {
                    agent: u8::try_from(t).map_err(|_| Refused("too many threads".into()))?,
                    op: *op,
                    data: false,
                    what: String::new(),
                });
            }
        }
        // Each load's candidate sources: stores of its value to its location, or the
        // initial value; a lock taken reads from an unlock of it or the initial state.
        let loads: Vec<usize> = (0..events.len()).filter(|&i| events[i].is_load()).collect();
        let mut sources: Vec<Vec<Option<usize>>> = Vec::new();
        for &l in &loads {
            let loc = events[l].loc().unwrap_or_default();
            let lock = lock_locs.contains(&loc);
            let value = events[l].value();
            let mut s: Vec<Option<usize>> = (0..events.len())
                .filter(|&w| {
                    events[w].is_store()
                        && events[w].loc() == Some(loc)
                        && (lock || events[w].value() == value)
                })
                .map(Some)
                .collect();
            // CAST: the values are the test's small integers.
            if lock || value == Some(init_of(loc) as u64) {
                s.push(None);
            }
            if s.is_empty() {
                return Ok(());
            }
            sources.push(s);
        }
        let mut by_loc: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, e) in events.iter().enumerate() {
            if let (true, Some(loc)) = (e.is_store(), e.loc()) {
                by_loc.entry(loc).or_default().push(i);
            }
        }
        let orders: Vec<(u64, Vec<Vec<usize>>)> = by_loc
            .into_iter()
            .map(|(loc, stores)| (loc, permutations(&stores)))
            .collect();
        let mut rf_pick = vec![0usize; loads.len()];
        loop {
            let rf: HashMap<usize, Option<usize>> = loads
                .iter()
                .zip(&rf_pick)
                .enumerate()
                .map(|(k, (&l, &p))| (l, sources[k][p]))
                .collect();
            // A lock is taken from each unlock, and from the initial state, once.
            let mut taken = BTreeSet::new();
            let exclusive = loads.iter().all(|l| {
                let loc = events[*l].loc().unwrap_or_default();
                !lock_locs.contains(&loc) || taken.insert((loc, rf[l]))
            });
            if exclusive {
                let mut co_pick = vec![0usize; orders.len()];
                loop {
                    *tried += 1;
                    if *tried > MAX_CANDIDATES {
                        return refuse("too many candidate executions");
                    }
                    let co = orders
                        .iter()
                        .zip(&co_pick)
                        .map(|((loc, perms), &p)| (*loc, perms[p].clone()))
                        .collect();
                    let exec = Execution { rf: rf.clone(), co };
                    if contract::consistent(&events, &exec) {
                        let state = self.final_state(chosen, &events, &exec, init_of);
                        let holds = self.exists.holds(&state.iter().cloned().collect());
                        states.insert(state, holds);
                    }
                    if !advance(&mut co_pick, |k| orders[k].1.len()) {
                        break;
                    }
                }
            }
            if !advance(&mut rf_pick, |k| sources[k].len()) {
                return Ok(());
            }
        }
    }

    /// The observed variables' final values.
    fn final_state(
        &self,
        chosen: &[&Run],
        events: &[Event],
        exec: &Execution,
        init_of: &dyn Fn(u64) -> i64,
    ) -> Vec<(Var, i64)> {
        let locs = self.loc_ids();
        self.observed
            .iter()
            .map(|v| {
                let value = match v {
                    Var::Reg(t, r) => chosen
                        .get(*t)
                        .and_then(|run| run.regs.get(r))
                        .copied()
                        .unwrap_or(0),
                    Var::Loc(name) => {
                        let loc = locs.get(name.as_str()).copied().unwrap_or(u64::MAX);
                        exec.co
                            .get(&loc)
                            .and_then(|s| s.last())
                            .and_then(|&w| events[w].value())
                            // CAST: back to the test's small integers.
                            .map_or(init_of(loc), |v| v as i64)
                    }
                };
                (v.clone(), value)
            })
            .collect()
    }
}

/// Advances a mixed-radix counter; returns `false` when it wraps to all zeros.
fn advance(pick: &mut [usize], radix: impl Fn(usize) -> usize) -> bool {
    for (k, p) in pick.iter_mut().enumerate() {
        *p += 1;
        if *p < radix(k) {
            return true;
        }
        *p = 0;
    }
    false
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}
