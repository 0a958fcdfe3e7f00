// SPDX-License-Identifier: GPL-2.0

//! The machine and the date a report was made on.

use std::time::{
    SystemTime,
    UNIX_EPOCH, //
};

use crate::pin;

/// The machine a report was made on.
#[derive(Clone, Debug)]
pub struct Machine {
    /// CPUs this process may run on (`nproc`).
    pub nproc: usize,
    /// The CPU model from `/proc/cpuinfo`, or `"unknown"`.
    pub cpu_model: String,
    /// The kernel release, or `"unknown"`.
    pub kernel: String,
    /// The load average (1, 5 and 15 minutes) when the run started, or `"unknown"`.
    pub loadavg: String,
    /// The date and time the run started, UTC, ISO 8601.
    pub date: String,
    /// Whether both agents' CPUs could be pinned to.
    pub pinnable: bool,
}

impl Machine {
    /// Looks at the machine.
    pub fn probe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Self {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: cpu_model(&cpuinfo).unwrap_or("unknown").to_owned(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            loadavg: read_trimmed("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            date: utc_date(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
            pinnable: pin::probe(),
        }
    }
}

/// Returns the first line of `path`, trimmed, or `"unknown"`.
fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.trim().to_owned()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Returns the CPU model named in `cpuinfo`: `model name` (x86), else `Model` or
/// `Hardware` (arm64).
pub fn cpu_model(cpuinfo: &str) -> Option<&str> {
    ["model name", "Model", "Hardware"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim())
        })
    })
}

/// Returns `secs` after the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_date(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's `civil_from_days`, for days since 1970-01-01 (never negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_date_of_the_epoch() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn utc_date_after_a_leap_day() {
        // 2024-03-01 12:34:56 UTC.
        assert_eq!(utc_date(1_709_296_496), "2024-03-01T12:34:56Z");
    }

    #[test]
    fn cpu_model_prefers_the_model_name() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n";
        assert_eq!(cpu_model(info), Some("AMD EPYC"));
    }
}
