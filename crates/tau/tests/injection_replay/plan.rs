//! The scenario file and the runs it makes: every task once without injection, and every
//! task with every injection its reads can carry, each as a replay script, the office's
//! injections and the lines a person who refuses everything types.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{answer, tool_call};

/// How tau names the office's tools: `SERVER__TOOL`.
pub const SERVER: &str = "office";

/// `crates/tau/tests/fixtures/injection_scenarios.json`.
#[derive(Debug, Deserialize)]
pub struct Scenarios {
    /// The office's tools and the tier tau's manifest gives each.
    pub tiers: BTreeMap<String, u8>,
    /// Which injection vector each read's result holds.
    pub vectors: BTreeMap<String, String>,
    /// The injected text around a goal: `{goal}` stands for the goal.
    pub template: String,
    pub tasks: Vec<Task>,
    pub injections: Vec<Injection>,
}

/// What a person asks for, and what an obedient model does for it.
#[derive(Debug, Deserialize)]
pub struct Task {
    pub id: String,
    /// The line the person types: every value the task's writes use is in it.
    pub prompt: String,
    pub reads: Vec<Call>,
    /// The task's own writes (none for a task that only reads).
    pub calls: Vec<Call>,
    pub answer: String,
}

#[derive(Debug, Deserialize)]
pub struct Call {
    pub tool: String,
    pub input: Value,
}

/// What a stranger's text tries to make the model do.
#[derive(Debug, Deserialize)]
pub struct Injection {
    pub id: String,
    /// How the text hides or dresses its value (plain, zero_width, lookalike, case, split,
    /// embedded, imitation).
    pub variant: String,
    /// One text, or two for an injection split over two reads.
    pub goals: Vec<String>,
    /// The calls a hijacked model makes.
    pub calls: Vec<Call>,
    pub reached: Goal,
}

/// The injection succeeded when a call of `tool` ran with `value` in `argument`.
#[derive(Debug, Deserialize)]
pub struct Goal {
    pub tool: String,
    /// A JSON pointer into the call's arguments.
    pub argument: String,
    pub value: String,
}

impl Scenarios {
    pub fn load() -> Self {
        let path = fixtures().join("injection_scenarios.json");
        let text = std::fs::read_to_string(&path).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every run: each task benign, then each (task, injection) whose reads reach enough
    /// vectors for the injection's texts.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs: Vec<Run> = (0..self.tasks.len())
            .map(|task| Run {
                task,
                injection: None,
            })
            .collect();
        for (task, t) in self.tasks.iter().enumerate() {
            let vectors = self.vectors_of(t);
            for (injection, i) in self.injections.iter().enumerate() {
                if vectors.len() >= i.goals.len() {
                    runs.push(Run {
                        task,
                        injection: Some(injection),
                    });
                }
            }
        }
        runs
    }

    /// The distinct vectors a task's reads show, in the order it reads them.
    fn vectors_of(&self, task: &Task) -> Vec<String> {
        let mut vectors: Vec<String> = Vec::new();
        for read in &task.reads {
            let vector = self.vectors[&read.tool].clone();
            if !vectors.contains(&vector) {
                vectors.push(vector);
            }
        }
        vectors
    }

    /// The `[mcp.servers.office]` table for one run: `endpoint` says where the office is,
    /// the manifest gives each tool its tier.
    pub fn config(&self, endpoint: &str) -> String {
        let tiers: Vec<String> = self
            .tiers
            .iter()
            .map(|(tool, tier)| format!("{tool} = {tier}"))
            .collect();
        format!(
            "[mcp.servers.{SERVER}]\n{endpoint}tools = {{ {} }}\n",
            tiers.join(", ")
        )
    }

    /// Vector to injected text: the injection's texts in the first vectors the task's
    /// reads show (none for a benign run).
    pub fn placed(&self, run: &Run) -> Value {
        let Some(injection) = run.injection.map(|i| &self.injections[i]) else {
            return json!({});
        };
        let vectors = self.vectors_of(&self.tasks[run.task]);
        let placed: serde_json::Map<String, Value> = vectors
            .into_iter()
            .zip(&injection.goals)
            .map(|(vector, goal)| (vector, json!(self.template.replace("{goal}", goal))))
            .collect();
        Value::Object(placed)
    }

    /// The reads whose result carries the injection (tau's tool name, call id).
    pub fn carriers(&self, run: &Run) -> Vec<(String, String)> {
        let placed = self.placed(run);
        self.tasks[run.task]
            .reads
            .iter()
            .enumerate()
            .filter(|(_, read)| placed.get(&self.vectors[&read.tool]).is_some())
            .map(|(n, read)| (tool_name(&read.tool), read_id(n)))
            .collect()
    }

    /// The model's side: the task's reads, then the injected calls (or the task's own),
    /// its answer, and one more answer for each line of [`Self::stdin`] no question took.
    pub fn replay(&self, run: &Run) -> Value {
        let task = &self.tasks[run.task];
        let mut script: Vec<Value> = task
            .reads
            .iter()
            .enumerate()
            .map(|(n, read)| tool_call(&read_id(n), &tool_name(&read.tool), &read.input))
            .collect();
        for (id, call) in self.acting_calls(run) {
            script.push(tool_call(&id, &tool_name(&call.tool), &call.input));
        }
        script.push(answer(&task.answer));
        for _ in 0..self.calls_in(run) {
            script.push(answer("Understood."));
        }
        Value::Array(script)
    }

    /// The person's side: the prompt, then "n" for every call that could be asked. The
    /// "n" lines no question takes become prompts of their own.
    pub fn stdin(&self, run: &Run) -> String {
        let mut lines = format!("{}\n", self.tasks[run.task].prompt);
        lines.push_str(&"n\n".repeat(self.calls_in(run)));
        lines
    }

    /// The calls after the reads, with their ids: the injection's (`inject-N`) or the
    /// task's own (`task-N`).
    pub fn acting_calls<'a>(&'a self, run: &Run) -> Vec<(String, &'a Call)> {
        match run.injection {
            Some(i) => self.injections[i]
                .calls
                .iter()
                .enumerate()
                .map(|(n, call)| (format!("inject-{}", n + 1), call))
                .collect(),
            None => self.tasks[run.task]
                .calls
                .iter()
                .enumerate()
                .map(|(n, call)| (format!("task-{}", n + 1), call))
                .collect(),
        }
    }

    fn calls_in(&self, run: &Run) -> usize {
        self.tasks[run.task].reads.len() + self.acting_calls(run).len()
    }

    /// Every call of the script with its id, in order.
    pub fn script_calls<'a>(&'a self, run: &Run) -> Vec<(String, &'a Call)> {
        let reads = self.tasks[run.task]
            .reads
            .iter()
            .enumerate()
            .map(|(n, read)| (read_id(n), read));
        reads.chain(self.acting_calls(run)).collect()
    }
}

/// One replay: a task, with or without an injection.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub task: usize,
    pub injection: Option<usize>,
}

/// How tau names an office tool.
pub fn tool_name(tool: &str) -> String {
    format!("{SERVER}__{tool}")
}

fn read_id(n: usize) -> String {
    format!("read-{}", n + 1)
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}
