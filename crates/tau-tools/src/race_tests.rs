//! Attacks on the file tools by a process that swaps a directory (or `notes.md`) for a
//! symlink to somewhere outside while a tool runs, over and over. A tool may fail while
//! that goes on; it may never read, list or write outside.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use rustix::fs::{CWD, RenameFlags};
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolOutput, ToolResultContent};

use crate::append_note::AppendNote;
use crate::clock::TimeSource;
use crate::list_dir::ListDir;
use crate::read_file::ReadFile;
use crate::workspace::Workspace;
use crate::write_file::WriteFile;

const ATTEMPTS: usize = 3000;

/// A workspace and a directory outside it, with `secret.txt` in each.
struct Scene {
    inside: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let scene = Self {
            inside: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        std::fs::write(scene.outside.path().join("secret.txt"), "OUTSIDE").unwrap();
        scene
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(self.inside.path()).unwrap()
    }

    fn at(&self, name: &str) -> PathBuf {
        self.inside.path().join(name)
    }

    /// `name` and `name.swap` trade places until the returned guard drops: one of them is
    /// `real` (made by the caller), the other a symlink to `target` outside.
    fn swapping(&self, name: &str, target: &Path) -> Swapper {
        let a = self.at(name);
        let b = self.at(&format!("{name}.swap"));
        std::os::unix::fs::symlink(target, &b).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
            }
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }
}

struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

async fn call(tool: &dyn Tool, input: Value) -> Option<ToolOutput> {
    tool.run(input, ToolContext::new("t1", "tool", None))
        .await
        .ok()
}

fn text_of(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text(text) => text.clone(),
            ToolResultContent::Json(value) => value.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn read_file_never_reads_through_a_swapped_in_symlink() {
    let scene = Scene::new();
    std::fs::create_dir(scene.at("d")).unwrap();
    std::fs::write(scene.at("d/secret.txt"), "inside").unwrap();
    let tool = ReadFile::new(scene.workspace());
    let _swapper = scene.swapping("d", scene.outside.path());
    let mut read = 0;
    for _ in 0..ATTEMPTS {
        if let Some(output) = call(&tool, json!({"path": "d/secret.txt"})).await {
            assert_eq!(text_of(&output), "inside");
            read += 1;
        }
    }
    assert!(read > 0, "never read at all, so nothing was tested");
}

#[tokio::test]
async fn list_dir_never_lists_through_a_swapped_in_symlink() {
    let scene = Scene::new();
    std::fs::create_dir(scene.at("d")).unwrap();
    std::fs::write(scene.at("d/mine.txt"), "").unwrap();
    let tool = ListDir::new(scene.workspace());
    let _swapper = scene.swapping("d", scene.outside.path());
    let mut listed = 0;
    for _ in 0..ATTEMPTS {
        if let Some(output) = call(&tool, json!({"path": "d"})).await {
            assert!(!text_of(&output).contains("secret.txt"), "listed outside");
            listed += 1;
        }
    }
    assert!(listed > 0, "never listed at all, so nothing was tested");
}

#[tokio::test]
async fn write_file_never_writes_through_a_swapped_in_symlink() {
    let scene = Scene::new();
    std::fs::create_dir(scene.at("d")).unwrap();
    let tool = WriteFile::new(scene.workspace());
    {
        let _swapper = scene.swapping("d", scene.outside.path());
        let mut written = 0;
        for _ in 0..ATTEMPTS {
            written += usize::from(
                call(&tool, json!({"path": "d/new.txt", "content": "x"}))
                    .await
                    .is_some(),
            );
        }
        assert!(written > 0, "never wrote at all, so nothing was tested");
    }
    let mut outside: Vec<_> = std::fs::read_dir(scene.outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    outside.sort();
    assert_eq!(outside, vec!["secret.txt"]);
}

#[tokio::test]
async fn append_note_never_appends_through_a_swapped_in_symlink() {
    let scene = Scene::new();
    std::fs::write(scene.at("notes.md"), "").unwrap();
    let time = TimeSource::fixed("UTC", "2026-05-01T11:03:07Z");
    let tool = AppendNote::new(scene.workspace(), time);
    let target = scene.outside.path().join("secret.txt");
    {
        let _swapper = scene.swapping("notes.md", &target);
        let mut appended = 0;
        for _ in 0..ATTEMPTS {
            appended += usize::from(call(&tool, json!({"text": "x"})).await.is_some());
        }
        assert!(appended > 0, "never appended at all, so nothing was tested");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "OUTSIDE");
}
