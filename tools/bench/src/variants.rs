// SPDX-License-Identifier: GPL-2.0

//! The driver's barrier variants, measured in the same run as the design: `--variants`.
//!
//! A variant is the same driver with other barriers, in a copy of the source that `cargo
//! xtask variant-tree` makes (see "Barrier variants" in the crate's documentation), so it
//! is another build of this very binary: [`build`] makes the copy of each of
//! [`OTHER_VARIANTS`] (`target/bench-variants/NAME`) and has cargo build this binary there,
//! into a target directory of the variants' own (`target/bench-variants/target`), and
//! [`Variant::measure`] runs it for one repetition of one figure
//! (`--measure-one KEY`), which prints one [`SAMPLE_TAG`] line. The harness runs the
//! variants' repetition of a queue figure right after its own, back to back, so that the
//! per-repetition ratio compares figures measured under the same weather.

use std::{
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
};

use crate::{
    Config,
    FigureSpec,
    Mode,
    Sample, //
};

/// The variants other than the design, as `cargo xtask variant-tree` names them.
pub const OTHER_VARIANTS: &[&str] = &["all-full", "seed"];

/// What `--measure-one` prints before its figure.
pub const SAMPLE_TAG: &str = "vgsp-bench-sample";

/// The workspace's root.
const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The target directory of the variant builds.
fn target_dir() -> PathBuf {
    Path::new(WORKSPACE).join("target/bench-variants")
}

/// A build of this benchmark against another barrier variant of the driver.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Its name, as [`crate::VARIANT`] of that build gives it.
    pub name: &'static str,
    /// The executable.
    pub exe: PathBuf,
}

/// Makes the copy of the source of each of [`OTHER_VARIANTS`] and builds (release) this
/// benchmark there, copying each executable to `target/bench-variants/vgsp-bench-NAME`.
/// Cargo's output goes to standard error.
///
/// # Errors
///
/// Why cargo could not be run, or a copy or a build failed.
pub fn build(progress: &mut dyn FnMut(&str)) -> Result<Vec<Variant>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let dir = target_dir();
    let run = |what: &str, cmd: &mut Command| -> Result<(), String> {
        let status = cmd
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {cargo}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{what} failed"))
        }
    };
    let mut out = Vec::new();
    for &name in OTHER_VARIANTS {
        let tree = dir.join(name);
        progress(&format!("making and building the {name} variant"));
        run(
            &format!("cargo xtask variant-tree {name}"),
            Command::new(&cargo)
                .current_dir(WORKSPACE)
                .args(["xtask", "variant-tree", name])
                .arg(&tree),
        )?;
        run(
            &format!("building the {name} variant"),
            Command::new(&cargo)
                .current_dir(&tree)
                .env("VGSP_BENCH_VARIANT", name)
                // A variant's barriers leave imported the flavours it no longer names
                // (all-full uses neither `Read` nor `Write`): not worth a warning.
                .env("RUSTFLAGS", "-A unused-imports")
                .args([
                    "build",
                    "--release",
                    "--quiet",
                    "-p",
                    "vgsp-bench",
                    "--bin",
                    "vgsp-bench",
                    "--target-dir",
                ])
                .arg(dir.join("target")),
        )?;
        // Every variant build leaves its binary at the same path: keep a copy per variant.
        let exe = dir.join(format!("vgsp-bench-{name}"));
        std::fs::copy(dir.join("target/release/vgsp-bench"), &exe)
            .map_err(|e| format!("cannot copy the {name} binary: {e}"))?;
        out.push(Variant { name, exe });
    }
    Ok(out)
}

impl Variant {
    /// Runs one repetition of `spec` in this variant's binary, with the configuration of
    /// `cfg`'s mode.
    ///
    /// # Errors
    ///
    /// Why the binary could not be run, failed, or printed no sample of this variant.
    pub fn measure(&self, cfg: &Config, spec: &FigureSpec) -> Result<Sample, String> {
        let mut cmd = Command::new(&self.exe);
        match cfg.mode {
            Mode::Full => {}
            Mode::Quick => {
                cmd.arg("--quick");
            }
            Mode::Smoke => {
                cmd.arg("--smoke");
            }
        }
        let out = cmd
            .args(["--measure-one", spec.key])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "{} --measure-one {}: {}{}",
                self.name,
                spec.key,
                stdout,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let (variant, sample) = stdout
            .lines()
            .find_map(|l| parse_sample(l, spec))
            .ok_or_else(|| format!("{} printed no sample of {}: {stdout}", self.name, spec.key))?;
        if variant != self.name {
            return Err(format!(
                "{} is a build of the {variant} variant, not of {}",
                self.exe.display(),
                self.name
            ));
        }
        Ok(sample)
    }
}

/// Returns the line `--measure-one` prints for `sample` of `spec`: the tag, the variant,
/// the key, the value and the p99 (`-` for none).
pub fn sample_line(variant: &str, spec: &FigureSpec, sample: &Sample) -> String {
    let p99 = sample.p99.map_or("-".into(), |p| format!("{p}"));
    format!("{SAMPLE_TAG} {variant} {} {} {p99}", spec.key, sample.value)
}

/// Parses a line of [`sample_line`] for `spec`; returns the variant and the sample.
pub fn parse_sample(line: &str, spec: &FigureSpec) -> Option<(String, Sample)> {
    let mut words = line.split_whitespace();
    if words.next()? != SAMPLE_TAG {
        return None;
    }
    let variant = words.next()?.to_owned();
    if words.next()? != spec.key {
        return None;
    }
    let value = words.next()?.parse().ok()?;
    let p99 = match words.next()? {
        "-" => None,
        p => Some(p.parse().ok()?),
    };
    Some((variant, Sample { value, p99 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_lines_parse_back() {
        let spec = crate::figure("echo8_rt_busy_ns").unwrap();
        let s = Sample {
            value: 1234.5,
            p99: Some(2000.0),
        };
        let (variant, back) = parse_sample(&sample_line("all-full", spec, &s), spec).unwrap();
        assert_eq!((variant.as_str(), back), ("all-full", s));
        let rate = Sample::rate(3.25);
        let spec = crate::figure("cmd_4k_mbps").unwrap();
        let (_, back) = parse_sample(&sample_line("seed", spec, &rate), spec).unwrap();
        assert_eq!(back, rate);
    }

    #[test]
    fn sample_lines_of_another_figure_are_ignored() {
        let spec = crate::figure("cmd_4k_mbps").unwrap();
        let other = crate::figure("cmd_16k_mbps").unwrap();
        let line = sample_line("seed", spec, &Sample::rate(1.0));
        assert!(parse_sample(&line, other).is_none());
    }
}
