// SPDX-License-Identifier: GPL-2.0

//! The report: the figures' medians, the ratios, the table and the JSON file.

use std::{
    fmt::Write as _,
    time::Duration, //
};

use crate::{
    instructions::Counted,
    machine::Machine,
    pin,
    queue::rpc_shape,
    stats,
    Config,
    FigureSpec,
    Goal,
    Measure,
    RatioSpec,
    Sample,
    Unit,
    DESIGN_VARIANT,
    PENDING,
    RATIOS,
    VARIANT, //
};

/// The version of the JSON file's layout.
pub const JSON_SCHEMA: u32 = 1;

/// Figures as measured: each with one sample a repetition.
pub type Measured = Vec<(&'static FigureSpec, Vec<Sample>)>;

/// Every repetition of one figure.
#[derive(Debug)]
pub struct FigureResult {
    /// The figure.
    pub spec: &'static FigureSpec,
    /// One sample a repetition, in order.
    pub samples: Vec<Sample>,
}

impl FigureResult {
    /// Returns the values of the repetitions.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.samples.iter().map(|s| s.value)
    }

    /// Returns the median over the repetitions.
    pub fn median(&self) -> f64 {
        stats::median(self.values())
    }

    /// Returns the median over the repetitions of the p99, for latencies.
    pub fn p99(&self) -> Option<f64> {
        self.spec
            .has_p99()
            .then(|| stats::median(self.samples.iter().filter_map(|s| s.p99)))
    }

    /// Returns the lowest and the highest repetition.
    pub fn spread(&self) -> (f64, f64) {
        self.values()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }

    /// Returns the median messages a second, for streams of messages.
    pub fn msgs_per_s(&self) -> Option<f64> {
        let bytes = self.spec.msg_bytes()?;
        // CAST: message sizes are far below 2^53.
        (self.spec.unit == Unit::MBps).then(|| self.median() * 1e6 / bytes as f64)
    }

    /// Returns the elements and slots of one command, for the queue's throughput.
    pub fn shape(&self) -> Option<(usize, u32)> {
        match self.spec.measure {
            Measure::Commands(len) => Some(rpc_shape(len)),
            _ => None,
        }
    }

    /// Returns the label with the command's shape, if it has one.
    fn long_label(&self) -> String {
        match self.shape() {
            Some((1, 1)) => format!("{} [1 el, 1 slot]", self.spec.label),
            Some((1, slots)) => format!("{} [1 el, {slots} slots]", self.spec.label),
            Some((els, slots)) => format!("{} [{els} els, {slots} slots]", self.spec.label),
            None => self.spec.label.to_owned(),
        }
    }
}

/// One figure over another, repetition by repetition: what a ratio and a variant ratio
/// hold.
struct Quotient {
    /// The ratio within each repetition.
    per_rep: Vec<f64>,
    /// The median of `per_rep`.
    value: f64,
    /// The ratio of the two figures' medians.
    of_medians: f64,
}

impl Quotient {
    /// Returns `num` over `den`, each repetition over the same repetition.
    fn new(num: &FigureResult, den: &FigureResult) -> Self {
        let per_rep: Vec<f64> = num.values().zip(den.values()).map(|(n, d)| n / d).collect();
        Self {
            value: stats::median(per_rep.iter().copied()),
            of_medians: num.median() / den.median(),
            per_rep,
        }
    }
}

/// One ratio, from the figures of the same run.
#[derive(Debug)]
pub struct RatioResult {
    /// The ratio.
    pub spec: &'static RatioSpec,
    /// The ratio within each repetition.
    pub per_rep: Vec<f64>,
    /// The median of `per_rep`: the figure the goal is judged on.
    pub value: f64,
    /// The ratio of the two figures' medians.
    pub of_medians: f64,
}

impl RatioResult {
    /// Returns whether the goal is met, if there is one.
    pub fn met(&self) -> Option<bool> {
        self.spec.goal.map(|g| g.met(self.value))
    }
}

/// The queue figures of one other barrier variant of the driver (`--variants`).
#[derive(Debug)]
pub struct VariantResult {
    /// The variant's name (`all-full`, `seed`).
    pub name: &'static str,
    /// Its queue figures, one sample a repetition, each measured right after the same
    /// repetition of this build's figure.
    pub figures: Vec<FigureResult>,
}

/// This build's figure over a variant's, from the same run: `acq-rel / all-full` and
/// `acq-rel / seed`. For a round trip below 1 means this build is faster, for a
/// throughput above 1.
#[derive(Debug)]
pub struct VariantRatio {
    /// The variant in the denominator.
    pub variant: &'static str,
    /// The figure.
    pub spec: &'static FigureSpec,
    /// The ratio within each repetition.
    pub per_rep: Vec<f64>,
    /// The median of `per_rep`.
    pub value: f64,
    /// The ratio of the two figures' medians.
    pub of_medians: f64,
    /// The goal: against `all-full`, never slower (at most 1 for a round trip, at least 1
    /// for a throughput); none against the seed.
    pub goal: Option<Goal>,
}

impl VariantRatio {
    /// Returns the key of the ratio in the JSON file: `acq_rel_over_all_full`, ...
    pub fn key(&self) -> String {
        variant_key(self.variant)
    }

    /// Returns whether the goal is met, if there is one.
    pub fn met(&self) -> Option<bool> {
        self.goal.map(|g| g.met(self.value))
    }
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// Whether every thread ran where it was meant to.
    pub pinned: bool,
    /// The configuration.
    pub cfg: Config,
    /// Every figure measured, in the order of [`crate::FIGURES`].
    pub figures: Vec<FigureResult>,
    /// Every ratio whose figures were measured, in the order of [`RATIOS`].
    pub ratios: Vec<RatioResult>,
    /// The other barrier variants measured beside this build (`--variants`), if any.
    pub variants: Vec<VariantResult>,
    /// This build's queue figures over each variant's, variant by variant.
    pub variant_ratios: Vec<VariantRatio>,
    /// The instructions per command of each side, counted by callgrind, if counted.
    pub instructions: Vec<Counted>,
    /// Each ratio's value in every run of `--runs`, this one's last (one entry when run
    /// once), in the order of `ratios`.
    pub runs: Vec<Vec<f64>>,
}

/// The median and range of one ratio over the runs of `--runs`.
#[derive(Debug)]
pub struct RunsResult<'a> {
    /// The ratio, as this run measured it.
    pub ratio: &'a RatioResult,
    /// Its value in every run.
    pub values: &'a [f64],
    /// The median of `values`: the figure the goal is judged on.
    pub median: f64,
    /// The lowest and highest run.
    pub range: (f64, f64),
}

impl RunsResult<'_> {
    /// Returns whether the goal is met by the median of the runs, if there is a goal.
    pub fn met(&self) -> Option<bool> {
        self.ratio.spec.goal.map(|g| g.met(self.median))
    }
}

impl Report {
    /// Makes the report of `measured`: each figure measured, with one sample a
    /// repetition.
    pub fn new(machine: Machine, cfg: Config, measured: Measured) -> Self {
        let figures: Vec<FigureResult> = measured
            .into_iter()
            .map(|(spec, samples)| FigureResult { spec, samples })
            .collect();
        let find = |key: &str| figures.iter().find(|f| f.spec.key == key);
        let ratios = RATIOS
            .iter()
            .filter_map(|spec| {
                let Quotient {
                    per_rep,
                    value,
                    of_medians,
                } = Quotient::new(find(spec.num)?, find(spec.den)?);
                Some(RatioResult {
                    spec,
                    per_rep,
                    value,
                    of_medians,
                })
            })
            .collect();
        Self {
            pinned: machine.pinnable && pin::all_pinned(),
            machine,
            cfg,
            figures,
            ratios,
            variants: Vec::new(),
            variant_ratios: Vec::new(),
            instructions: Vec::new(),
            runs: Vec::new(),
        }
        .with_runs(&[])
    }

    /// Records the ratios of `earlier` runs of the same configuration beside this one's
    /// (`--runs`).
    pub fn with_runs(mut self, earlier: &[Report]) -> Self {
        self.runs = self
            .ratios
            .iter()
            .map(|r| {
                let mut values: Vec<f64> = earlier
                    .iter()
                    .filter_map(|e| e.ratios.iter().find(|o| o.spec.key == r.spec.key))
                    .map(|o| o.value)
                    .collect();
                values.push(r.value);
                values
            })
            .collect();
        self
    }

    /// Adds the instructions per command counted by callgrind.
    pub fn with_instructions(mut self, counted: Vec<Counted>) -> Self {
        self.instructions = counted;
        self
    }

    /// Returns this run's ratios on one line, those with a goal: what `--runs` prints of
    /// each run before the last.
    pub fn ratios_line(&self) -> String {
        let items: Vec<String> = self
            .ratios
            .iter()
            .filter(|r| r.spec.goal.is_some())
            .map(|r| format!("{} {}", r.spec.key, ratio(r.value)))
            .collect();
        items.join(", ")
    }

    /// Returns how many runs of `--runs` the report holds (one when run once, none when
    /// no ratio was measured).
    fn run_count(&self) -> usize {
        self.runs.first().map_or(0, Vec::len)
    }

    /// Returns whether each goal measured is met: each ratio's (judged on the median of the
    /// runs if there were several), acq-rel / all-Full as one (met if met on every queue
    /// figure), the instructions'.
    fn goals(&self) -> Vec<bool> {
        let mut goals: Vec<bool> = if self.run_count() > 1 {
            self.over_runs().filter_map(|r| r.met()).collect()
        } else {
            self.ratios.iter().filter_map(RatioResult::met).collect()
        };
        let against_full: Vec<bool> = self
            .ratios_to("all-full")
            .filter_map(VariantRatio::met)
            .collect();
        if !against_full.is_empty() {
            goals.push(against_full.iter().all(|&m| m));
        }
        goals.extend(self.instructions.iter().filter_map(Counted::met));
        goals
    }

    /// Returns every ratio's median and range over the runs.
    pub fn over_runs(&self) -> impl Iterator<Item = RunsResult<'_>> {
        self.ratios.iter().zip(&self.runs).map(|(ratio, values)| {
            let range = values
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            RunsResult {
                ratio,
                values,
                median: stats::median(values.iter().copied()),
                range,
            }
        })
    }

    /// Adds the queue figures of other barrier variants, `(name, figures)`, each figure
    /// with one sample a repetition, and their ratios to this build's.
    pub fn with_variants(mut self, measured: Vec<(&'static str, Measured)>) -> Self {
        for (name, figures) in measured {
            let figures: Vec<FigureResult> = figures
                .into_iter()
                .map(|(spec, samples)| FigureResult { spec, samples })
                .collect();
            for theirs in &figures {
                let Some(ours) = self.figure(theirs.spec.key) else {
                    continue;
                };
                let Quotient {
                    per_rep,
                    value,
                    of_medians,
                } = Quotient::new(ours, theirs);
                // Never slower than every barrier `Full`: the goal only against all-Full,
                // and only for the design.
                let goal = (name == "all-full" && VARIANT == DESIGN_VARIANT).then_some(
                    match theirs.spec.unit {
                        Unit::Ns => Goal::AtMost(1.0),
                        Unit::GBps | Unit::MBps | Unit::RpcPerS => Goal::AtLeast(1.0),
                    },
                );
                self.variant_ratios.push(VariantRatio {
                    variant: name,
                    spec: theirs.spec,
                    per_rep,
                    value,
                    of_medians,
                    goal,
                });
            }
            self.variants.push(VariantResult { name, figures });
        }
        self
    }

    /// Returns the pending ratios: [`PENDING`], unless a ratio to the all-Full variant was
    /// measured (the variant may run and give none: `--variants --only` of figures it is
    /// not measured on).
    pub fn pending(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        if self.ratios_to("all-full").next().is_some() {
            &[]
        } else {
            PENDING
        }
    }

    /// Returns the ratios to `variant`, in the order of the figures.
    pub fn ratios_to<'a>(&'a self, variant: &'a str) -> impl Iterator<Item = &'a VariantRatio> {
        self.variant_ratios
            .iter()
            .filter(move |r| r.variant == variant)
    }

    /// Returns the figure whose key is `key`.
    pub fn figure(&self, key: &str) -> Option<&FigureResult> {
        self.figures.iter().find(|f| f.spec.key == key)
    }

    /// Returns the printed report: the header, the table of figures, the ratios.
    pub fn table(&self) -> String {
        let m = &self.machine;
        let cfg = &self.cfg;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "vgsp-bench: nova-core's GSP command queue against the machine and rtrb"
        );
        let _ = writeln!(
            out,
            "date {}; machine: {}, nproc {}, Linux {}, load {}",
            m.date, m.cpu_model, m.nproc, m.kernel, m.loadavg
        );
        let _ = writeln!(
            out,
            "driver thread on CPU {}, GSP thread on CPU {} ({}); mode {}: {} repetition(s) \
             interleaved, {} ms a figure each; median over the repetitions, min..max beside",
            pin::DRIVER_CPU,
            pin::GSP_CPU,
            if self.pinned { "pinned" } else { "NOT pinned" },
            cfg.mode.name(),
            cfg.reps,
            num(millis(cfg.sample_time)),
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<9} {:<52} {:<8} {:>16} {:>18}  min .. max",
            "section", "figure", "variant", "median", "p99 / rate"
        );
        for f in &self.figures {
            let unit = f.spec.unit.symbol();
            let detail = match (f.p99(), f.msgs_per_s()) {
                (Some(p99), _) => format!("p99 {} {unit}", num(p99)),
                (None, Some(rate)) => format!("{} msg/s", num(rate)),
                (None, None) => String::new(),
            };
            let (lo, hi) = f.spread();
            let _ = writeln!(
                out,
                "{:<9} {:<52} {:<8} {:>16} {:>18}  {} .. {}",
                f.spec.section.name(),
                f.long_label(),
                f.spec.variant().unwrap_or("-"),
                format!("{} {unit}", num(f.median())),
                detail,
                num(lo),
                num(hi),
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<52} {:>8} {:>11} {:>8}  verdict",
            "ratio (same run)", "value", "of medians", "goal"
        );
        for r in &self.ratios {
            let (goal, verdict) = verdict(r.spec.goal, r.met());
            let _ = writeln!(
                out,
                "{:<52} {:>8} {:>11} {:>8}  {}",
                r.spec.label,
                ratio(r.value),
                ratio(r.of_medians),
                goal,
                verdict
            );
        }
        for (_, label, why) in self.pending() {
            let _ = writeln!(out, "{label:<52} {:>8}  pending: {why}", "n/a");
        }
        self.runs_table(&mut out);
        self.instructions_table(&mut out);
        self.variant_table(&mut out);
        let goals = self.goals();
        let _ = writeln!(
            out,
            "\ngoals met: {} of {} measured ({} pending)",
            goals.iter().filter(|&&m| m).count(),
            goals.len(),
            self.pending().len()
        );
        out
    }

    /// Appends each ratio's median and range over the runs, if there were several.
    fn runs_table(&self, out: &mut String) {
        let n = self.run_count();
        if n < 2 {
            return;
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<52} {:>8} {:>15} {:>8}  verdict (each run's value: {} runs)",
            format!("ratio over {n} runs"),
            "median",
            "range",
            "goal",
            n
        );
        for r in self.over_runs() {
            let (goal, verdict) = verdict(r.ratio.spec.goal, r.met());
            let values: Vec<String> = r.values.iter().map(|&v| ratio(v)).collect();
            let _ = writeln!(
                out,
                "{:<52} {:>8} {:>15} {:>8}  {} ({})",
                r.ratio.spec.label,
                ratio(r.median),
                format!("{} .. {}", ratio(r.range.0), ratio(r.range.1)),
                goal,
                verdict,
                values.join(", ")
            );
        }
    }

    /// Appends the instructions per command, if they were counted.
    fn instructions_table(&self, out: &mut String) {
        if self.instructions.is_empty() {
            return;
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<52} {:>8} {:>8} {:>8} {:>8}  (callgrind, driver and GSP in turns on one \
             thread: the same on every run)",
            "instructions per command", "driver", "GSP", "total", "goal"
        );
        for c in &self.instructions {
            let (goal, verdict) = verdict(c.goal(), c.met());
            let _ = writeln!(
                out,
                "{:<52} {:>8.0} {:>8.0} {:>8.0} {:>8}  {}",
                c.workload.label,
                c.driver,
                c.gsp,
                c.total(),
                goal,
                verdict
            );
        }
    }

    /// Appends the table of the barrier variants, if any were measured.
    fn variant_table(&self, out: &mut String) {
        if self.variants.is_empty() {
            return;
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "barrier variants of the driver (each repetition of a figure: this build's, then \
             each variant's binary, back to back)"
        );
        let mut head = format!("{:<46} {:>11}", "figure", VARIANT);
        for v in &self.variants {
            let _ = write!(head, " {:>11}", v.name);
        }
        for v in &self.variants {
            let _ = write!(head, " {:>17}", format!("{VARIANT}/{}", v.name));
        }
        let _ = writeln!(out, "{head}  goal");
        for ours in self.figures.iter().filter(|f| f.spec.across_variants()) {
            let unit = ours.spec.unit.symbol();
            let mut line = format!(
                "{:<46} {:>11}",
                ours.spec.label,
                format!("{} {unit}", num(ours.median()))
            );
            for v in &self.variants {
                let theirs = v.figures.iter().find(|f| f.spec.key == ours.spec.key);
                let cell = theirs.map_or("-".into(), |f| format!("{} {unit}", num(f.median())));
                let _ = write!(line, " {cell:>11}");
            }
            let mut judged = String::new();
            for v in &self.variants {
                let r = self.ratios_to(v.name).find(|r| r.spec.key == ours.spec.key);
                let _ = write!(line, " {:>17}", r.map_or("-".into(), |r| ratio(r.value)));
                if let Some(r) = r.filter(|r| r.goal.is_some()) {
                    let (goal, met) = verdict(r.goal, r.met());
                    judged = format!("{goal} vs {}: {met}", v.name);
                }
            }
            let _ = writeln!(out, "{line}  {judged}");
        }
        let met: Vec<bool> = self
            .ratios_to("all-full")
            .filter_map(VariantRatio::met)
            .collect();
        if !met.is_empty() {
            let _ = writeln!(
                out,
                "{VARIANT} not slower than all-Full (median of the per-repetition ratios): {} of \
                 {} queue figures",
                met.iter().filter(|&&m| m).count(),
                met.len()
            );
        }
    }

    /// Returns the report as JSON (layout [`JSON_SCHEMA`]).
    pub fn json(&self) -> String {
        let m = &self.machine;
        let cfg = &self.cfg;
        let machine = object(&[
            ("nproc", m.nproc.to_string()),
            ("cpu_model", string(&m.cpu_model)),
            ("kernel", string(&m.kernel)),
            ("loadavg", string(&m.loadavg)),
            ("pinned", self.pinned.to_string()),
            ("driver_cpu", pin::DRIVER_CPU.to_string()),
            ("gsp_cpu", pin::GSP_CPU.to_string()),
        ]);
        let config = object(&[
            ("mode", string(cfg.mode.name())),
            ("repetitions", cfg.reps.to_string()),
            ("sample_ms", number(millis(cfg.sample_time))),
            ("min_iters", cfg.min_iters.to_string()),
            ("asleep_gap_us", cfg.asleep_gap.as_micros().to_string()),
        ]);
        let top = [
            ("tool", string("vgsp-bench")),
            ("schema", JSON_SCHEMA.to_string()),
            ("variant", string(VARIANT)),
            ("date", string(&m.date)),
            ("machine", machine),
            ("config", config),
            ("figures", self.figures_json()),
            ("ratios", self.ratios_json()),
            ("variants", self.variants_json()),
            ("variant_ratios", self.variant_ratios_json()),
            ("runs", self.runs_json()),
            ("instructions", self.instructions_json()),
            ("pending", self.pending_json()),
        ];
        let mut out = block(&top, 0);
        out.push('\n');
        out
    }

    /// Returns the JSON object of the figures, by key.
    fn figures_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .figures
            .iter()
            .map(|f| {
                let (lo, hi) = f.spread();
                let mut fields = vec![
                    ("section", string(f.spec.section.name())),
                    ("label", string(f.spec.label)),
                    ("unit", string(f.spec.unit.symbol())),
                    ("variant", f.spec.variant().map_or("null".into(), string)),
                    ("median", number(f.median())),
                    ("min", number(lo)),
                    ("max", number(hi)),
                    ("samples", numbers(f.values())),
                ];
                if let Some(p99) = f.p99() {
                    fields.push(("p99", number(p99)));
                    fields.push((
                        "p99_samples",
                        numbers(f.samples.iter().filter_map(|s| s.p99)),
                    ));
                }
                if let Some(bytes) = f.spec.msg_bytes() {
                    fields.push(("msg_bytes", bytes.to_string()));
                }
                if let Some(rate) = f.msgs_per_s() {
                    fields.push(("msgs_per_s", number(rate)));
                }
                if let Some((elements, slots)) = f.shape() {
                    fields.push(("elements", elements.to_string()));
                    fields.push(("slots", slots.to_string()));
                }
                (f.spec.key, object(&fields))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of the ratios, by key.
    fn ratios_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .ratios
            .iter()
            .map(|r| {
                let fields = [
                    ("label", string(r.spec.label)),
                    ("num", string(r.spec.num)),
                    ("den", string(r.spec.den)),
                    ("value", number(r.value)),
                    ("of_medians", number(r.of_medians)),
                    ("per_repetition", numbers(r.per_rep.iter().copied())),
                    ("goal", goal_json(r.spec.goal)),
                    ("met", boolean(r.met())),
                ];
                (r.spec.key, object(&fields))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of the barrier variants' figures, by variant.
    fn variants_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .variants
            .iter()
            .map(|v| {
                let figures: Vec<(&str, String)> = v
                    .figures
                    .iter()
                    .map(|f| {
                        let mut fields = vec![
                            ("median", number(f.median())),
                            ("samples", numbers(f.values())),
                        ];
                        if let Some(p99) = f.p99() {
                            fields.push(("p99", number(p99)));
                        }
                        (f.spec.key, object(&fields))
                    })
                    .collect();
                (v.name, object(&[("figures", object(&figures))]))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of this build's figures over each variant's, by
    /// [`variant_key`].
    fn variant_ratios_json(&self) -> String {
        let members: Vec<(String, String)> = self
            .variants
            .iter()
            .map(|v| {
                let ratios: Vec<(&str, String)> = self
                    .ratios_to(v.name)
                    .map(|r| {
                        let fields = [
                            ("value", number(r.value)),
                            ("of_medians", number(r.of_medians)),
                            ("per_repetition", numbers(r.per_rep.iter().copied())),
                            ("goal", goal_json(r.goal)),
                            ("met", boolean(r.met())),
                        ];
                        (r.spec.key, object(&fields))
                    })
                    .collect();
                (variant_key(v.name), object(&ratios))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of each ratio over the runs, by key.
    fn runs_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .over_runs()
            .map(|r| {
                let fields = [
                    ("values", numbers(r.values.iter().copied())),
                    ("median", number(r.median)),
                    ("min", number(r.range.0)),
                    ("max", number(r.range.1)),
                    ("met", boolean(r.met())),
                ];
                (r.ratio.spec.key, object(&fields))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of the instructions per command, by workload.
    fn instructions_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .instructions
            .iter()
            .map(|c| {
                let fields = [
                    ("label", string(c.workload.label)),
                    ("driver", number(c.driver)),
                    ("gsp", number(c.gsp)),
                    ("total", number(c.total())),
                    ("goal", goal_json(c.goal())),
                    ("met", boolean(c.met())),
                ];
                (c.workload.key, object(&fields))
            })
            .collect();
        block(&members, 1)
    }

    /// Returns the JSON object of the pending ratios, by key.
    fn pending_json(&self) -> String {
        let members: Vec<(&str, String)> = self
            .pending()
            .iter()
            .map(|(key, label, why)| {
                let fields = [("label", string(label)), ("why", string(why))];
                (*key, object(&fields))
            })
            .collect();
        block(&members, 1)
    }
}

/// Returns `v` with three or so significant digits.
fn num(v: f64) -> String {
    match v.abs() {
        a if !a.is_finite() => format!("{v}"),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// Returns `d` in milliseconds, fractions included (`--smoke` samples for 500 µs).
fn millis(d: Duration) -> f64 {
    // CAST: a sample time is far below 2^53 ns (about 104 days).
    d.as_nanos() as f64 / 1e6
}

/// Returns a ratio with two decimals.
fn ratio(v: f64) -> String {
    format!("{v:.2}")
}

/// Returns a goal as `<= 2`, `>= 0.8` or `0.9..1.1`.
fn goal_text(goal: Goal) -> String {
    match goal {
        Goal::AtMost(b) => format!("<= {b}"),
        Goal::AtLeast(b) => format!(">= {b}"),
        Goal::Between(low, high) => format!("{low}..{high}"),
    }
}

/// Returns the goal column and the verdict of a figure judged on `goal`: `-` and
/// `(for information)` without a goal.
fn verdict(goal: Option<Goal>, met: Option<bool>) -> (String, &'static str) {
    match (goal, met) {
        (Some(g), Some(true)) => (goal_text(g), "met"),
        (Some(g), Some(false)) => (goal_text(g), "NOT met"),
        _ => ("-".into(), "(for information)"),
    }
}

/// Returns the JSON key of this build's figures over `variant`'s: `acq_rel_over_all_full`,
/// `acq_rel_over_seed` (dashes made underscores).
fn variant_key(variant: &str) -> String {
    format!("{VARIANT}_over_{variant}").replace('-', "_")
}

/// Returns `s` as a JSON string.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Returns `v` as a JSON number, or `null` if it is not finite.
fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// Returns `met` as a JSON boolean, or `null` if there is no goal.
fn boolean(met: Option<bool>) -> String {
    met.map_or("null".into(), |m| m.to_string())
}

/// Returns `goal` as a JSON string (`"<= 3"`), or `null` if there is none.
fn goal_json(goal: Option<Goal>) -> String {
    goal.map_or("null".into(), |g| string(&goal_text(g)))
}

/// Returns `values` as a JSON array of numbers.
fn numbers(values: impl Iterator<Item = f64>) -> String {
    let items: Vec<String> = values.map(number).collect();
    format!("[{}]", items.join(", "))
}

/// Returns a JSON object of `fields`, whose values are JSON already.
fn object(fields: &[(&str, String)]) -> String {
    let items: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}: {v}", string(k)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// Returns a JSON object of `members`, each a key and its value (JSON already), one a
/// line, indented as an object nested `depth` deep (the file's top level is 0).
fn block<K: AsRef<str>>(members: &[(K, String)], depth: usize) -> String {
    let indent = "  ".repeat(depth);
    let mut out = String::from("{\n");
    for (i, (key, value)) in members.iter().enumerate() {
        let _ = writeln!(
            out,
            "{indent}  {}: {value}{}",
            string(key.as_ref()),
            comma(i, members.len())
        );
    }
    let _ = write!(out, "{indent}}}");
    out
}

/// Returns the separator after item `i` of `len`.
fn comma(i: usize, len: usize) -> &'static str {
    if i + 1 < len {
        ","
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::{
        instructions::WORKLOADS,
        Mode,
        FIGURES, //
    };

    /// Returns a machine as a report records it, made up: no probing.
    fn machine() -> Machine {
        Machine {
            nproc: 2,
            cpu_model: "test".into(),
            kernel: "test".into(),
            loadavg: "0 0 0".into(),
            date: "2026-01-01T00:00:00Z".into(),
            pinnable: false,
        }
    }

    /// Returns a latency sample of `ns`.
    fn ns(ns: f64) -> Sample {
        Sample {
            value: ns,
            p99: Some(2.0 * ns),
        }
    }

    /// Returns the figure whose key is `key`.
    fn spec(key: &str) -> &'static FigureSpec {
        crate::figure(key).unwrap()
    }

    /// Returns a smoke report of the ping-pong and the busy round trip whose one
    /// repetition makes `rt_busy_over_pingpong` (goal at most 3) equal `ratio`.
    fn round_trip_report(ratio: f64) -> Report {
        let measured = vec![
            (spec("pingpong_rt_ns"), vec![ns(100.0)]),
            (spec("echo8_rt_busy_ns"), vec![ns(100.0 * ratio)]),
        ];
        Report::new(machine(), Config::new(Mode::Smoke), measured)
    }

    /// Returns the report's JSON, parsed.
    fn json(report: &Report) -> Value {
        serde_json::from_str(&report.json()).unwrap()
    }

    /// Returns the counts of the echo workload, `total` instructions in all.
    fn echo_counted(total: f64) -> Counted {
        let workload = WORKLOADS.iter().find(|w| w.echo).unwrap();
        Counted {
            workload,
            driver: total / 2.0,
            gsp: total / 2.0,
        }
    }

    #[test]
    fn every_ratio_divides_figures_of_one_unit() {
        for r in RATIOS {
            let (num, den) = (crate::figure(r.num), crate::figure(r.den));
            let (Some(num), Some(den)) = (num, den) else {
                panic!("{}: unknown figure", r.key);
            };
            assert_eq!(num.unit, den.unit, "{}", r.key);
        }
    }

    #[test]
    fn measure_order_is_a_permutation_of_the_figures() {
        let mut order = crate::MEASURE_ORDER.to_vec();
        let mut keys: Vec<&str> = FIGURES.iter().map(|f| f.key).collect();
        order.sort_unstable();
        keys.sort_unstable();
        assert_eq!(order, keys);
    }

    #[test]
    fn the_figures_of_every_goal_are_measured_back_to_back() {
        let at = |key: &str| crate::MEASURE_ORDER.iter().position(|k| *k == key);
        for r in RATIOS.iter().filter(|r| r.goal.is_some()) {
            let (Some(num), Some(den)) = (at(r.num), at(r.den)) else {
                panic!("{}: a figure is not in MEASURE_ORDER", r.key);
            };
            assert_eq!(num.abs_diff(den), 1, "{}", r.key);
        }
    }

    #[test]
    fn a_goal_between_two_bounds_includes_both() {
        let goal = Goal::Between(0.9, 1.1);
        assert!(goal.met(0.9) && goal.met(1.0) && goal.met(1.1));
        assert!(!goal.met(0.89) && !goal.met(1.11));
        assert_eq!(goal_text(goal), "0.9..1.1");
    }

    #[test]
    fn figure_keys_are_unique() {
        for (i, f) in FIGURES.iter().enumerate() {
            assert!(FIGURES[..i].iter().all(|g| g.key != f.key), "{}", f.key);
        }
    }

    #[test]
    fn json_strings_escape_quotes_and_controls() {
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }

    #[test]
    fn non_finite_numbers_are_null() {
        assert_eq!(number(f64::NAN), "null");
    }

    #[test]
    fn a_variant_ratio_key_has_no_dashes() {
        let measured = vec![(spec("echo8_rt_busy_ns"), vec![ns(100.0)])];
        let report = Report::new(machine(), Config::new(Mode::Smoke), measured.clone())
            .with_variants(vec![("all-full", measured)]);
        assert_eq!(report.variant_ratios[0].key(), "acq_rel_over_all_full");
    }

    #[test]
    fn the_json_keys_a_variant_without_ratios_as_one_with_them() {
        // The variant measured a figure this build did not: no ratio to it.
        let report = round_trip_report(2.0).with_variants(vec![(
            "all-full",
            vec![(spec("cmd_4k_mbps"), vec![Sample::rate(1000.0)])],
        )]);
        assert_eq!(
            json(&report)["variant_ratios"]["acq_rel_over_all_full"],
            serde_json::json!({})
        );
    }

    #[test]
    fn the_ratio_to_all_full_stays_pending_if_none_was_measured() {
        let report = round_trip_report(2.0).with_variants(vec![(
            "all-full",
            vec![(spec("cmd_4k_mbps"), vec![Sample::rate(1000.0)])],
        )]);
        assert_eq!(report.pending(), PENDING);
    }

    #[test]
    fn goals_met_are_tallied_on_the_median_of_several_runs() {
        // The last run misses the goal (4 > 3); the median of the three (2.5) meets it.
        let earlier = [round_trip_report(2.0), round_trip_report(2.5)];
        let report = round_trip_report(4.0).with_runs(&earlier);
        assert!(
            report.table().contains("goals met: 1 of 1 measured"),
            "{}",
            report.table()
        );
    }

    #[test]
    fn goals_met_include_the_instructions_goal() {
        // The ratio meets its goal (2 <= 3), the echo's count misses its own.
        let report = round_trip_report(2.0).with_instructions(vec![echo_counted(3000.0)]);
        assert!(
            report.table().contains("goals met: 1 of 2 measured"),
            "{}",
            report.table()
        );
    }

    #[test]
    fn the_table_gives_a_sub_millisecond_sample_time() {
        // `--smoke` samples for 500 us.
        let table = round_trip_report(2.0).table();
        assert!(table.contains(", 0.50 ms a figure each;"), "{table}");
    }

    #[test]
    fn the_json_gives_a_sub_millisecond_sample_time() {
        let config = &json(&round_trip_report(2.0))["config"];
        assert_eq!(config["sample_ms"].as_f64(), Some(0.5));
    }

    #[test]
    fn the_json_says_whether_the_instructions_goal_is_met() {
        let report = round_trip_report(2.0).with_instructions(vec![echo_counted(1500.0)]);
        let echo = &json(&report)["instructions"]["instr_echo8"];
        assert_eq!(echo["met"], true);
    }

    #[test]
    fn the_json_gives_a_null_met_to_instructions_without_a_goal() {
        let workload = WORKLOADS.iter().find(|w| !w.echo).unwrap();
        let counted = Counted {
            workload,
            driver: 3000.0,
            gsp: 2000.0,
        };
        let report = round_trip_report(2.0).with_instructions(vec![counted]);
        assert!(json(&report)["instructions"][workload.key]["met"].is_null());
    }

    #[test]
    fn a_json_map_gives_each_member_a_line_indented_to_its_depth() {
        let members = [("a", "1".to_owned()), ("b", "2".to_owned())];
        assert_eq!(block(&members, 1), "{\n    \"a\": 1,\n    \"b\": 2\n  }");
    }

    #[test]
    fn a_verdict_without_a_goal_is_for_information() {
        assert_eq!(verdict(None, None), ("-".into(), "(for information)"));
    }
}
