//! One output stream of a command: the first bytes kept up to a cap, the rest counted, and
//! each complete line streamed as progress while it is kept.

use tau_agent::ToolContext;
use tokio::io::{AsyncRead, AsyncReadExt};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    /// Stdout lines go out as they are; stderr lines say where they came from.
    fn progress_line(self, line: &str) -> String {
        match self {
            Self::Stdout => line.to_owned(),
            Self::Stderr => format!("stderr: {line}"),
        }
    }
}

/// What was read from one stream so far. Reading may stop at any await (a timeout) and
/// resume later without losing a byte already read.
pub(crate) struct Capture {
    stream: Stream,
    limit: usize,
    kept: Vec<u8>,
    dropped: u64,
    /// Start in `kept` of the line not yet sent as progress.
    line_start: usize,
}

const CHUNK: usize = 8 * 1024;

impl Capture {
    pub(crate) fn new(stream: Stream, limit: usize) -> Self {
        Self {
            stream,
            limit,
            kept: Vec::new(),
            dropped: 0,
            line_start: 0,
        }
    }

    /// Reads `reader` to its end.
    pub(crate) async fn drain<R: AsyncRead + Unpin>(
        &mut self,
        reader: &mut R,
        context: &ToolContext,
    ) {
        let mut chunk = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut chunk).await {
                // A read error ends the stream like its end does: the exit status still tells.
                Ok(0) | Err(_) => break,
                Ok(read) => self.push(chunk.get(..read).unwrap_or_default(), context),
            }
        }
        self.flush_line(context);
    }

    fn push(&mut self, bytes: &[u8], context: &ToolContext) {
        let room = self.limit.saturating_sub(self.kept.len());
        let (keep, drop) = bytes.split_at(room.min(bytes.len()));
        self.kept.extend_from_slice(keep);
        self.send_lines(context);
        if !drop.is_empty() {
            if self.dropped == 0 {
                self.flush_line(context);
                context.progress(format!(
                    "[{} truncated after {} bytes]",
                    self.stream.name(),
                    self.limit
                ));
            }
            self.dropped += drop.len() as u64;
        }
    }

    fn send_lines(&mut self, context: &ToolContext) {
        let pending = self.kept.get(self.line_start..).unwrap_or_default();
        let mut consumed = 0;
        for line in pending.split_inclusive(|&b| b == b'\n') {
            let Some(text) = line.strip_suffix(b"\n") else {
                break;
            };
            let text = String::from_utf8_lossy(text.strip_suffix(b"\r").unwrap_or(text));
            context.progress(self.stream.progress_line(&text));
            consumed += line.len();
        }
        self.line_start += consumed;
    }

    /// Sends the last line even when it has no newline.
    fn flush_line(&mut self, context: &ToolContext) {
        let pending = self.kept.get(self.line_start..).unwrap_or_default();
        if !pending.is_empty() {
            context.progress(self.stream.progress_line(&String::from_utf8_lossy(pending)));
            self.line_start = self.kept.len();
        }
    }

    /// The kept text, with a marker saying how much more there was.
    pub(crate) fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[output truncated: {} more bytes]",
                self.dropped
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tau_agent::{EventSink, TurnEvent};

    async fn capture(limit: usize, chunks: &[&[u8]]) -> (String, Vec<String>) {
        let (sink, mut events) = EventSink::channel();
        let context = ToolContext::new("t1", "run_command", Some(sink));
        let mut capture = Capture::new(Stream::Stderr, limit);
        let mut reader = ChunkReader {
            chunks: chunks.iter().map(|c| c.to_vec()).collect(),
        };
        capture.drain(&mut reader, &context).await;
        drop(context);
        let mut lines = Vec::new();
        while let Some(event) = events.recv().await {
            let TurnEvent::ToolProgress { message, .. } = event else {
                panic!("unexpected {event:?}");
            };
            lines.push(message);
        }
        (capture.text(), lines)
    }

    /// Returns the chunks one read at a time, like a pipe does.
    struct ChunkReader {
        chunks: std::collections::VecDeque<Vec<u8>>,
    }

    impl AsyncRead for ChunkReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(chunk) = self.chunks.pop_front() {
                buf.put_slice(&chunk);
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn lines_split_across_reads_arrive_whole() {
        let (text, lines) = capture(100, &[b"one\ntw", b"o\r\nthr", b"ee"]).await;
        assert_eq!(text, "one\ntwo\r\nthree");
        assert_eq!(lines, vec!["stderr: one", "stderr: two", "stderr: three"]);
    }

    #[tokio::test]
    async fn output_past_the_cap_is_counted_not_kept() {
        let (text, lines) = capture(6, &[b"abc\nde", b"fgh\n", b"ijkl"]).await;
        assert_eq!(text, "abc\nde\n[output truncated: 8 more bytes]");
        assert_eq!(
            lines,
            vec![
                "stderr: abc",
                "stderr: de",
                "[stderr truncated after 6 bytes]"
            ]
        );
    }

    #[tokio::test]
    async fn nothing_read_is_nothing_shown() {
        assert_eq!(capture(10, &[]).await, (String::new(), vec![]));
    }
}
