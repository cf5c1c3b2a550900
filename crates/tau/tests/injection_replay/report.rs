//! The suite's numbers: one row per injection, the totals, and what benign tasks cost.

use std::fmt::Write;
use std::time::Duration;

use crate::measure::Outcome;
use crate::plan::{Run, Scenarios};

/// Every run with what it did, and how long the whole suite took.
pub struct Suite {
    pub scenarios: Scenarios,
    pub runs: Vec<(Run, Outcome)>,
    pub took: Duration,
    pub threads: usize,
}

/// Sums over some runs.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Totals {
    pub runs: usize,
    pub reached: usize,
    pub asked: usize,
    pub named: usize,
    pub credited_to_person: usize,
}

impl Totals {
    fn add(&mut self, outcome: &Outcome) {
        self.runs += 1;
        self.reached += usize::from(outcome.reached);
        self.asked += outcome.asked;
        self.named += outcome.named;
        self.credited_to_person += outcome.credited_to_person;
    }
}

/// What the benign runs cost.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Benign {
    /// (questions, tasks) over the tasks that write something.
    pub sending: (usize, usize),
    /// (questions, tasks) over the tasks that only read.
    pub reading: (usize, usize),
    /// Values flagged on benign cards.
    pub flagged: usize,
    /// The most questions one sending task cost.
    pub most: usize,
}

impl Suite {
    pub fn injected(&self) -> impl Iterator<Item = &(Run, Outcome)> {
        self.runs.iter().filter(|(run, _)| run.injection.is_some())
    }

    pub fn benign_runs(&self) -> impl Iterator<Item = &(Run, Outcome)> {
        self.runs.iter().filter(|(run, _)| run.injection.is_none())
    }

    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        self.injected().for_each(|(_, o)| totals.add(o));
        totals
    }

    pub fn benign(&self) -> Benign {
        let mut benign = Benign::default();
        for (run, outcome) in self.benign_runs() {
            let sends = !self.scenarios.tasks[run.task].calls.is_empty();
            let slot = if sends {
                &mut benign.sending
            } else {
                &mut benign.reading
            };
            slot.0 += outcome.questions;
            slot.1 += 1;
            benign.flagged += outcome.flagged;
            if sends {
                benign.most = benign.most.max(outcome.questions);
            }
        }
        benign
    }

    /// `task × injection` of a run, or the task alone.
    pub fn name(&self, run: &Run) -> String {
        let task = &self.scenarios.tasks[run.task].id;
        match run.injection {
            Some(i) => format!("{task} × {}", self.scenarios.injections[i].id),
            None => task.clone(),
        }
    }

    /// The table the suite prints.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let injected = self.injected().count();
        let _ = writeln!(
            out,
            "injection replay: {} runs ({} benign, {injected} injected) in {:.0} s on {} threads",
            self.runs.len(),
            self.runs.len() - injected,
            self.took.as_secs_f64(),
            self.threads
        );
        let _ = writeln!(
            out,
            "a person who answers every question no; office reads tier 0, writes tier 1; tau's defaults\n"
        );
        let _ = writeln!(
            out,
            "{:<22} {:<11} {:>5} {:>8} {:>6} {:>6}",
            "injection", "variant", "runs", "reached", "asked", "named"
        );
        for (i, injection) in self.scenarios.injections.iter().enumerate() {
            let mut row = Totals::default();
            self.injected()
                .filter(|(run, _)| run.injection == Some(i))
                .for_each(|(_, o)| row.add(o));
            let _ = writeln!(out, "{}", line(&injection.id, &injection.variant, &row));
        }
        let totals = self.totals();
        let _ = writeln!(out, "{}", line("all", "", &totals));
        let benign = self.benign();
        let _ = writeln!(
            out,
            "\nbenign tasks: {} that send something cost {} questions ({} per task, at most {}); {} that only read cost {}",
            benign.sending.1,
            benign.sending.0,
            per(benign.sending),
            benign.most,
            benign.reading.1,
            benign.reading.0
        );
        let _ = writeln!(
            out,
            "values flagged on benign cards: {}; injected values credited to the person: {}",
            benign.flagged, totals.credited_to_person
        );
        out
    }
}

fn line(name: &str, variant: &str, row: &Totals) -> String {
    format!(
        "{name:<22} {variant:<11} {:>5} {:>8} {:>6} {:>6}",
        row.runs, row.reached, row.asked, row.named
    )
}

fn per((questions, tasks): (usize, usize)) -> String {
    if tasks == 0 {
        return "-".to_owned();
    }
    // Two decimals are plenty for a handful of tasks.
    #[allow(clippy::cast_precision_loss)]
    let ratio = questions as f64 / tasks as f64;
    format!("{ratio:.2}")
}
