//! Runs a backend's event stream through its translator, with an idle timeout, and hands
//! tau-agent a [`ChunkStream`].

use std::collections::VecDeque;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tau_agent::{ChunkStream, ModelError, StreamChunk};

/// Whether the translated message is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Done,
}

/// Turns one backend's upstream items into tau chunks.
pub(crate) trait Translate: Send + 'static {
    type Item: Send;

    /// Queues the chunks for one item; an error ends the stream.
    fn item(
        &mut self,
        item: Self::Item,
        out: &mut VecDeque<StreamChunk>,
    ) -> Result<Flow, ModelError>;

    /// The upstream ended before [`Flow::Done`]: a translator that can still finish the
    /// message queues the rest; by default the message is incomplete.
    fn upstream_ended(&mut self, _out: &mut VecDeque<StreamChunk>) -> Result<(), ModelError> {
        Err(closed_early())
    }
}

struct State<S, T> {
    upstream: S,
    translator: T,
    queue: VecDeque<StreamChunk>,
    finished: bool,
    timeout: Duration,
}

/// The translated stream. Every wait for the upstream is bounded by `timeout`; after the
/// first error, or the end of the message, nothing more is read.
pub(crate) fn translate<S, T>(
    upstream: S,
    translator: T,
    timeout: Duration,
) -> impl Stream<Item = Result<StreamChunk, ModelError>> + Send + 'static
where
    S: Stream<Item = T::Item> + Send + Unpin + 'static,
    T: Translate,
{
    let state = State {
        upstream,
        translator,
        queue: VecDeque::new(),
        finished: false,
        timeout,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(chunk) = state.queue.pop_front() {
                return Some((Ok(chunk), state));
            }
            if state.finished {
                return None;
            }
            let next = tokio::time::timeout(state.timeout, state.upstream.next()).await;
            let flow = match next {
                Err(_) => Err(timed_out(state.timeout)),
                Ok(None) => state
                    .translator
                    .upstream_ended(&mut state.queue)
                    .map(|()| Flow::Done),
                Ok(Some(item)) => state.translator.item(item, &mut state.queue),
            };
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Done) => state.finished = true,
                Err(error) => {
                    state.finished = true;
                    state.queue.clear();
                    return Some((Err(error), state));
                }
            }
        }
    })
}

pub(crate) fn closed_early() -> ModelError {
    ModelError::incomplete("the server closed the stream before the message was complete")
}

pub(crate) fn timed_out(timeout: Duration) -> ModelError {
    ModelError::other(format!(
        "the model server sent nothing for {} s (model.request_timeout_seconds)",
        timeout.as_secs()
    ))
}

/// Waits for the first chunk so that a failure before anything streamed (a refused key, a
/// 429) is returned by `Model::stream` itself, as the trait asks.
pub(crate) async fn primed(
    stream: impl Stream<Item = Result<StreamChunk, ModelError>> + Send + 'static,
) -> Result<ChunkStream, ModelError> {
    let mut stream = Box::pin(stream);
    match stream.next().await {
        None => Err(ModelError::incomplete(
            "the server closed the stream before sending anything",
        )),
        Some(Err(error)) => Err(error),
        Some(Ok(first)) => Ok(Box::pin(
            futures::stream::once(async { Ok(first) }).chain(stream),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tau_agent::{AgentStop, Role};

    /// Numbers in, text out; 0 finishes.
    struct Echo;

    impl Translate for Echo {
        type Item = u32;

        fn item(&mut self, item: u32, out: &mut VecDeque<StreamChunk>) -> Result<Flow, ModelError> {
            if item == 0 {
                out.push_back(StreamChunk::MessageStop {
                    stop_reason: AgentStop::EndTurn,
                });
                return Ok(Flow::Done);
            }
            if item == 99 {
                return Err(ModelError::other("bad item"));
            }
            out.push_back(StreamChunk::MessageStart {
                role: Role::Assistant,
            });
            Ok(Flow::Continue)
        }
    }

    async fn collect(items: Vec<u32>) -> Vec<Result<StreamChunk, ModelError>> {
        translate(futures::stream::iter(items), Echo, Duration::from_secs(5))
            .collect()
            .await
    }

    #[tokio::test]
    async fn stops_after_done_and_after_an_error() {
        let start = Ok(StreamChunk::MessageStart {
            role: Role::Assistant,
        });
        let stop = Ok(StreamChunk::MessageStop {
            stop_reason: AgentStop::EndTurn,
        });
        assert_eq!(collect(vec![1, 0, 1]).await, vec![start.clone(), stop]);
        assert_eq!(
            collect(vec![1, 99, 1]).await,
            vec![start.clone(), Err(ModelError::other("bad item"))]
        );
        assert_eq!(
            collect(vec![1]).await,
            vec![
                start,
                Err(ModelError::incomplete(
                    "the server closed the stream before the message was complete"
                ))
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_times_out() {
        let silent = futures::stream::pending::<u32>();
        let items: Vec<_> = translate(silent, Echo, Duration::from_secs(3))
            .collect()
            .await;
        assert_eq!(
            items,
            vec![Err(ModelError::other(
                "the model server sent nothing for 3 s (model.request_timeout_seconds)"
            ))]
        );
    }

    #[tokio::test]
    async fn an_error_first_is_returned_directly() {
        let items = collect(vec![99]).await;
        let Err(error) = primed(futures::stream::iter(items)).await else {
            panic!("expected an error");
        };
        assert_eq!(error, ModelError::other("bad item"));
    }
}
