//! Targets: how a report binary checks its measurements against the
//! numbers thumbpipe holds itself to, and says which were missed.
//!
//! Each check is a row of a markdown table (target, met, measured); a
//! report prints its tables, ends with [`Targets::summary`], and exits with
//! failure when [`Targets::all_met`] is false. Plain data.

use std::fmt::Write as _;

/// One target, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What must hold, as a reader should see it ("frame p99 <= 16.7 ms").
    pub target: String,
    /// Whether the runs met it.
    pub met: bool,
    /// What was measured, with enough context to judge a miss.
    pub measured: String,
}

/// The targets a report checked, in order, in titled groups.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    groups: Vec<(String, Vec<Check>)>,
}

impl Targets {
    /// Starts a group of checks under `title`: a table of its own.
    pub fn group(&mut self, title: impl Into<String>) {
        self.groups.push((title.into(), Vec::new()));
    }

    /// Records a check in the current group (one named "Targets" if none
    /// was started).
    pub fn check(&mut self, target: impl Into<String>, met: bool, measured: impl Into<String>) {
        if self.groups.is_empty() {
            self.group("Targets");
        }
        if let Some((_, checks)) = self.groups.last_mut() {
            checks.push(Check {
                target: target.into(),
                met,
                measured: measured.into(),
            });
        }
    }

    /// The current group's table in markdown, under its title as a heading
    /// of `level` (`"##"`, `"###"`).
    pub fn table(&self, level: &str) -> String {
        let Some((title, checks)) = self.groups.last() else {
            return String::new();
        };
        let mut out = format!("{level} {title}\n\n| target | met | measured |\n|---|---|---|\n");
        for check in checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                check.target,
                if check.met { "yes" } else { "**no**" },
                check.measured
            );
        }
        out
    }

    /// The checks not met, with their group's title.
    pub fn missed(&self) -> impl Iterator<Item = (&str, &Check)> {
        self.groups.iter().flat_map(|(title, checks)| {
            checks
                .iter()
                .filter(|check| !check.met)
                .map(move |check| (title.as_str(), check))
        })
    }

    /// Whether every check was met.
    pub fn all_met(&self) -> bool {
        self.missed().next().is_none()
    }

    /// The closing lines of a report: "Every target met." or the list of
    /// misses.
    pub fn summary(&self) -> String {
        if self.all_met() {
            return "Every target met.\n".to_owned();
        }
        let mut out = String::from("Missed:\n");
        for (title, check) in self.missed() {
            let _ = writeln!(out, "- {title}: {} ({})", check.target, check.measured);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_shows_in_its_table_and_in_the_summary() {
        let mut targets = Targets::default();
        targets.group("Targets for `pipeline`");
        targets.check("0 wrong-row images", true, "worst 0");
        targets.check("frame p99 <= 16.7 ms", false, "worst 21.30 ms");
        assert!(!targets.all_met());
        let table = targets.table("##");
        assert!(table.starts_with("## Targets for `pipeline`\n"));
        assert!(table.contains("| 0 wrong-row images | yes | worst 0 |"));
        assert!(table.contains("| frame p99 <= 16.7 ms | **no** | worst 21.30 ms |"));
        assert_eq!(
            targets.summary(),
            "Missed:\n- Targets for `pipeline`: frame p99 <= 16.7 ms (worst 21.30 ms)\n"
        );
    }

    #[test]
    fn checks_without_a_group_go_under_targets() {
        let mut targets = Targets::default();
        targets.check("a", true, "1");
        assert!(targets.all_met());
        assert_eq!(targets.summary(), "Every target met.\n");
        assert!(targets.table("###").starts_with("### Targets\n"));
    }
}
