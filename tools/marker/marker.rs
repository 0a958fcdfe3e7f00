//! Barrier markers.
//!
//! A barrier a tool must find carries a marker on the first line of its `// ORDERING:`
//! comment, the comment block right above the `dma_mb(..)`:
//!
//! ```text
//! // ORDERING: [cpu-wptr-release] STORE->STORE. …
//! dma_mb(Write);
//! ```
//!
//! `NAME` is lowercase letters, digits and `-`. The ordering mutants (`cargo xtask
//! mutants`) and the loom scenarios (`tools/model`) find the seed's two barriers by
//! [`CPU_WPTR_RELEASE`] and [`GSP_WPTR_ACQUIRE`] in [`SEED_FILE`].

/// The driver file holding the seed's two barriers.
pub const SEED_FILE: &str = "drivers/gpu/nova-core/gsp/cmdq/ring.rs";
/// The driver's barrier before it stores its write pointer.
pub const CPU_WPTR_RELEASE: &str = "cpu-wptr-release";
/// The driver's barrier after it loads the GSP's write pointer.
pub const GSP_WPTR_ACQUIRE: &str = "gsp-wptr-acquire";

/// Returns the name of the marker a line starts with, `// ORDERING: [NAME]` after any
/// indentation.
pub fn marker(line: &str) -> Option<&str> {
    let rest = line
        .trim_start()
        .strip_prefix("//")?
        .trim_start()
        .strip_prefix("ORDERING:")?;
    let (name, _) = rest.trim_start().strip_prefix('[')?.split_once(']')?;
    let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    (!name.is_empty() && name.chars().all(valid)).then_some(name)
}

/// Returns the marker of the barrier at index `barrier` of `lines`: the marker on the
/// first line of the comment block right above it, if any.
pub fn marker_of<'a>(lines: &[&'a str], barrier: usize) -> Option<&'a str> {
    let first = (0..barrier)
        .rev()
        .take_while(|&i| lines[i].trim_start().starts_with("//"))
        .last()?;
    marker(lines[first])
}

/// Returns the index of the line of `text` holding the barrier marked `name`.
///
/// # Errors
///
/// - No comment has the marker, or more than one has: the error names the marker.
/// - The marked comment is not right above a `dma_mb(..)`, or the marker is not on the
///   comment block's first line: the error names the line.
pub fn marked_barrier(text: &str, name: &str) -> Result<usize, String> {
    let lines: Vec<&str> = text.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| marker(lines[i]) == Some(name))
        .collect();
    let at = match at.as_slice() {
        &[at] => at,
        [] => {
            return Err(format!(
                "no barrier is marked `// ORDERING: [{name}]` (see tools/marker/marker.rs)"
            ))
        }
        _ => {
            return Err(format!(
                "{} comments are marked [{name}]: a marker names one barrier",
                at.len()
            ))
        }
    };
    let code = (at + 1..lines.len()).find(|&i| !lines[i].trim_start().starts_with("//"));
    match code {
        Some(i)
            if lines[i].trim_start().starts_with("dma_mb(")
                && marker_of(&lines, i) == Some(name) =>
        {
            Ok(i)
        }
        _ => Err(format!(
            "line {}: the comment marked [{name}] does not start the comment of a `dma_mb(..)`",
            at + 1
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
fn f() {
    // ORDERING: [a-1] STORE->STORE.
    // more words.
    dma_mb(Write);
    // Not first: ORDERING: [b] is not a marker.
    // ORDERING: [b] LOAD->LOAD.
    dma_mb(Read);
    // ORDERING: [`x`] LOAD->STORE.
    dma_mb(Full);
}
";

    #[test]
    fn a_marker_is_a_name_in_brackets_after_ordering() {
        assert_eq!(marker("  // ORDERING: [a-1] STORE->STORE."), Some("a-1"));
        assert_eq!(marker("// ORDERING: [`x`] LOAD."), None);
        assert_eq!(marker("// ORDERING: [] LOAD."), None);
        assert_eq!(marker("// see ORDERING: [a]"), None);
    }

    #[test]
    fn the_marked_barrier_is_the_dma_mb_under_the_comment() {
        assert_eq!(marked_barrier(SRC, "a-1"), Ok(3));
    }

    #[test]
    fn a_marker_below_the_first_comment_line_is_refused() {
        assert!(marked_barrier(SRC, "b").unwrap_err().contains("line 6"));
    }

    #[test]
    fn a_missing_marker_is_named() {
        assert!(marked_barrier(SRC, "zz").unwrap_err().contains("[zz]"));
    }

    #[test]
    fn a_marker_on_two_comments_is_refused() {
        let twice = format!("{SRC}// ORDERING: [a-1] again\ndma_mb(Full);\n");
        assert!(marked_barrier(&twice, "a-1")
            .unwrap_err()
            .contains("2 comments"));
    }

    #[test]
    fn each_barrier_has_its_block_s_first_marker() {
        let lines: Vec<&str> = SRC.lines().collect();
        assert_eq!(marker_of(&lines, 3), Some("a-1"));
        assert_eq!(marker_of(&lines, 6), None);
        assert_eq!(marker_of(&lines, 8), None);
    }
}
