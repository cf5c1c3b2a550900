//! What the display function costs: every argument a person approves, every tool name and
//! every piece of model text on a screen goes through it.
//!
//! `display`: a short command, a 1 KiB argument, 20,000 spaces (one marker), and text mixed
//! with invisible and bidi characters. `display_multiline`: a 4 KiB answer. Criterion
//! reports time and bytes per second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn display(c: &mut Criterion) {
    let hostile = "sh setup.sh\u{34f}\u{202e}txt.exe\u{200b}\u{2800}".repeat(32);
    let answer = "The lamp in the hall is on. Ölçüm: 21 °C.\n\tNext: the porch light.\n".repeat(64);
    let inputs = [
        ("short_command", "echo hi >> notes.md".to_owned()),
        ("one_kib_argument", "a".repeat(1024)),
        (
            "twenty_thousand_spaces",
            format!("sh a.sh{}rm -rf ~", " ".repeat(20_000)),
        ),
        ("invisible_and_bidi", hostile),
    ];
    let mut group = c.benchmark_group("display");
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| b.iter(|| tau_core::display(black_box(text))));
    }
    group.throughput(Throughput::Bytes(answer.len() as u64));
    group.bench_function("multiline_four_kib_answer", |b| {
        b.iter(|| tau_core::display_multiline(black_box(&answer)));
    });
    group.finish();
}

criterion_group!(benches, display);
criterion_main!(benches);
