// SPDX-License-Identifier: GPL-2.0

//! The RPCs of a boot of the emulated GH100, as the driver experienced them: the device's
//! `gh100: rpc:` lines (`drivers/gpu/vgsp/gh100/src/latency.rs` says how each figure is
//! measured) in a table, their medians, and the probe's time from the driver's chipset
//! line to its GPU-name line by the guest's console clock.

/// One RPC of the transcript.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rpc {
    /// The command, and the message that answered it when not its reply
    /// (`SET_REGISTRY -> GSP_INIT_DONE`).
    pub(crate) name: String,
    /// Doorbell to the driver's read pointer past the answer, in µs; `None` for a command
    /// without reply, or an answer not read.
    pub(crate) latency: Option<f64>,
    /// The GSP's time, in µs.
    pub(crate) gsp: Option<f64>,
    /// Doorbell to the GSP's step that took the command (transport and wake-up), in µs.
    pub(crate) wake: Option<f64>,
    /// The vCPUs' run time over the latency, in µs.
    pub(crate) cpu: Option<f64>,
}

/// The prefix of the device's RPC lines.
const RPC_LINE: &str = "gh100: rpc: ";

/// Returns the value of the field `key` (`latency 12.5 us`) among `fields`, if measured.
fn field(fields: &str, key: &str) -> Option<f64> {
    fields
        .split(", ")
        .find_map(|f| f.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.strip_suffix(" us"))
        .and_then(|v| v.parse().ok())
}

/// Returns the RPCs of a device transcript, in order.
pub(crate) fn rpcs(transcript: &str) -> Vec<Rpc> {
    transcript
        .lines()
        .filter_map(|l| l.strip_prefix(RPC_LINE))
        .filter_map(|l| l.rsplit_once(": "))
        .map(|(name, fields)| Rpc {
            name: name.to_string(),
            latency: field(fields, "latency"),
            gsp: field(fields, "gsp"),
            wake: field(fields, "wake"),
            cpu: field(fields, "cpu"),
        })
        .collect()
}

/// Returns the median of `values`, `None` if there is none.
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Returns the console timestamp of the first line holding `what`, in seconds.
fn stamp(console: &str, what: &str) -> Option<f64> {
    console.lines().find(|l| l.contains(what)).and_then(|l| {
        let (stamp, _) = l.trim_start().strip_prefix('[')?.split_once(']')?;
        stamp.trim().parse().ok()
    })
}

/// Returns the time from the driver's chipset line (its probe's first) to its GPU-name
/// line, in ms of the guest's clock.
pub(crate) fn probe_to_name(console: &str) -> Option<f64> {
    let probe = stamp(console, "NVIDIA (Chipset: ")?;
    let name = stamp(console, "GPU name: ")?;
    (name >= probe).then_some((name - probe) * 1e3)
}

/// Formats `v` µs, or `-`.
fn us(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.0} us"))
}

/// Returns the lines that report a boot's RPCs: one per RPC, then the medians over the
/// RPCs answered and read, then probe → GPU name. Nothing if the device said no RPC.
pub(crate) fn report(transcript: &str, console: &str) -> Vec<String> {
    let rpcs = rpcs(transcript);
    if rpcs.is_empty() {
        return Vec::new();
    }
    let width = rpcs.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut lines: Vec<String> = rpcs
        .iter()
        .map(|r| {
            format!(
                "rpc: {:width$}  latency {:>8}  wake {:>6}  gsp {:>6}  cpu {:>8}",
                r.name,
                us(r.latency),
                us(r.wake),
                us(r.gsp),
                us(r.cpu)
            )
        })
        .collect();
    let read: Vec<&Rpc> = rpcs.iter().filter(|r| r.latency.is_some()).collect();
    lines.push(format!(
        "rpc: median of {} RPCs answered: latency {}, wake {}, gsp {}, cpu {}",
        read.len(),
        us(median(read.iter().filter_map(|r| r.latency))),
        us(median(read.iter().filter_map(|r| r.wake))),
        us(median(read.iter().filter_map(|r| r.gsp))),
        us(median(read.iter().filter_map(|r| r.cpu)))
    ));
    if let Some(ms) = probe_to_name(console) {
        lines.push(format!(
            "rpc: probe (chipset line) to GPU name: {ms:.1} ms of the guest's clock"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRANSCRIPT: &str = "\
gh100: gsp: running
gh100: rpc: GSP_SET_SYSTEM_INFO (no reply): gsp 0.0 us, wake ?
gh100: rpc: SET_REGISTRY -> GSP_INIT_DONE: latency 6153.9 us, gsp 9.9 us, wake 44.1 us, cpu 4967.7 us
gh100: rpc: GET_GSP_STATIC_INFO: latency 909.6 us, gsp 16.1 us, wake 8.1 us, cpu ?
gh100: rpc: UNLOADING_GUEST_DRIVER: not read within 200 ms, gsp 14.0 us, wake 25.8 us
";

    #[test]
    fn rpc_lines_are_read_with_their_figures() {
        let rpcs = rpcs(TRANSCRIPT);
        assert_eq!(rpcs.len(), 4);
        assert_eq!(rpcs[0].name, "GSP_SET_SYSTEM_INFO (no reply)");
        assert_eq!(rpcs[0].latency, None);
        assert_eq!(rpcs[1].name, "SET_REGISTRY -> GSP_INIT_DONE");
        assert_eq!(rpcs[1].latency, Some(6153.9));
        assert_eq!(rpcs[1].cpu, Some(4967.7));
        assert_eq!(rpcs[2].gsp, Some(16.1));
        assert_eq!(rpcs[2].wake, Some(8.1));
        assert_eq!(rpcs[0].wake, None);
        assert_eq!(rpcs[2].cpu, None);
        assert_eq!(rpcs[3].latency, None);
        assert_eq!(rpcs[3].gsp, Some(14.0));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_middle_two_s_mean() {
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median([5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median([]), None);
        assert_eq!(median([f64::NAN, 2.0]), Some(2.0));
    }

    #[test]
    fn probe_to_name_is_between_the_driver_s_lines() {
        let console = "\
[    0.925243] serial8250: ttyS0 I/O:0x3f8 (irq = 4, base_baud = 115200) is a 16550A
[    0.943970] nova-core 0000:00:03.0: NVIDIA (Chipset: GH100, Architecture: Hopper, Revision: a.1)
[    0.996827] nova-core 0000:00:03.0: GPU name: NVIDIA vGSP virtual GPU
";
        let ms = probe_to_name(console).unwrap_or_default();
        assert!((ms - 52.857).abs() < 1e-6, "{ms}");
        assert_eq!(probe_to_name("[    0.9] GPU name: x"), None);
    }

    #[test]
    fn the_report_gives_the_medians_over_the_rpcs_read() {
        let lines = report(TRANSCRIPT, "");
        assert_eq!(lines.len(), 5);
        assert_eq!(
            lines[4],
            "rpc: median of 2 RPCs answered: latency 3532 us, wake 26 us, gsp 13 us, cpu 4968 us"
        );
        assert!(lines[2].contains("latency   910 us"), "{}", lines[2]);
        assert!(report("gh100: gsp: running", "").is_empty());
    }
}
