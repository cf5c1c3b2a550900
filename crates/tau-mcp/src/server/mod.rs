//! tau as an MCP server: the catalog listed with tier hints, every `tools/call` decided by
//! a `TierGate` of its own connection, no agent loop in between.
//!
//! - `approver.rs`: the client's user answers through `elicitation/create`
//! - `unaskable.rs`: a client without elicitation, where nobody can be asked
//! - `stdio.rs`, `http.rs`: the transports, and their front doors for bad input

mod approver;
pub(crate) mod http;
pub(crate) mod stdio;
mod unaskable;

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool as ListedTool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tau_agent::{ToolContext, ToolResultContent, ToolResultStatus, is_valid_tool_name};
use tau_core::{Approver, EventBus, TierGate, ToolCatalog, approval::TierLookup, gated_call};
use tau_protocol::Tier;

use crate::names::shown as shown_name;
use approver::ElicitationApprover;
use unaskable::{NEEDS_ELICITATION, UnaskableApprover};

/// What every connection shares: the tools, where events go, how long questions wait.
pub struct McpServer {
    catalog: Arc<ToolCatalog>,
    events: EventBus,
    /// `[approval] timeout_seconds`: bounds every question, whatever the channel says.
    approval_timeout: Option<Duration>,
    /// How long an elicitation naturally waits when `[approval]` sets no timeout.
    elicitation_timeout: Duration,
    connections: AtomicU64,
}

impl McpServer {
    pub fn new(
        catalog: ToolCatalog,
        events: EventBus,
        approval_timeout: Option<Duration>,
        elicitation_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            catalog: Arc::new(catalog),
            events,
            approval_timeout,
            elicitation_timeout,
            connections: AtomicU64::new(0),
        })
    }

    /// The handler for one new connection, with a gate of its own.
    pub(crate) fn connection(self: &Arc<Self>) -> Connection {
        let number = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        Connection {
            shared: Arc::clone(self),
            number,
            gate: tokio::sync::OnceCell::new(),
        }
    }
}

/// One client connection. Its gate is made at the first call, when the client's
/// capabilities are known, and asks one question at a time.
pub(crate) struct Connection {
    shared: Arc<McpServer>,
    number: u64,
    gate: tokio::sync::OnceCell<Arc<TierGate>>,
}

impl Connection {
    async fn gate(&self, peer: &Peer<RoleServer>) -> Arc<TierGate> {
        let shared = &self.shared;
        let gate = self
            .gate
            .get_or_init(|| async {
                let approver: Arc<dyn Approver> = if peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form)
                {
                    Arc::new(ElicitationApprover::new(
                        peer.clone(),
                        shared.elicitation_timeout,
                    ))
                } else {
                    Arc::new(UnaskableApprover)
                };
                let tiers: Arc<dyn TierLookup> = Arc::clone(&shared.catalog) as _;
                Arc::new(
                    TierGate::new(tiers, approver, shared.events.clone())
                        .with_timeout(shared.approval_timeout)
                        .with_channel(approver::MCP_CHANNEL),
                )
            })
            .await;
        Arc::clone(gate)
    }

    /// The one gated call: the gate's ladder decides, the tool runs only when allowed,
    /// and every call ends in a `tool_call` event.
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        // A name that can never be registered is refused by name only, shown safely.
        let name = if is_valid_tool_name(&params.name) {
            params.name.to_string()
        } else {
            shown_name(&params.name)
        };
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        let id = format!("mcp-{}-{}", self.number, context.id);
        let gate = self.gate(&context.peer).await;
        let outcome = gated_call(
            &gate,
            &self.shared.catalog,
            &name,
            &id,
            arguments,
            ToolContext::new(id.clone(), name.clone(), None),
        )
        .await;
        let content = outcome
            .result
            .content
            .iter()
            .map(|c| ContentBlock::text(text_of(c)))
            .collect();
        if outcome.result.status == ToolResultStatus::Error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }
}

fn text_of(content: &ToolResultContent) -> String {
    match content {
        ToolResultContent::Text(text) => text.clone(),
        ToolResultContent::Json(value) => value.to_string(),
    }
}

/// A catalog entry as MCP clients see it: name, description, input schema and the hints
/// its tier implies. A tier-2 tool says in its description that it needs a client with
/// elicitation, and in `_meta` (`tau/needsElicitation`) for clients that read it.
pub(crate) fn listed(name: &str, description: &str, schema: &Value, tier: Tier) -> ListedTool {
    let schema: JsonObject = match schema {
        Value::Object(map) => map.clone(),
        _ => JsonObject::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    let hints = match tier {
        Tier::Read => ToolAnnotations::new().read_only(true),
        Tier::Write => ToolAnnotations::new().read_only(false).destructive(false),
        Tier::Physical => ToolAnnotations::new().read_only(false).destructive(true),
    };
    let mut description = description.to_owned();
    let mut meta = None;
    if tier == Tier::Physical {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(NEEDS_ELICITATION);
        meta = Some(MetaObject(JsonObject::from_iter([
            ("tau/tier".to_owned(), Value::from(tier.number())),
            ("tau/needsElicitation".to_owned(), Value::Bool(true)),
        ])));
    }
    let mut tool = ListedTool::new(name.to_owned(), description, Arc::new(schema)).annotate(hints);
    tool.meta = meta;
    tool
}

impl ServerHandler for Connection {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tau", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "tau's tools. Tier-2 tools (destructiveHint) act on the physical world or run \
                 code; each call runs only after the person approves it.",
            )
    }

    /// Only versions with an `initialize` handshake: a connection is what carries the
    /// person's approval (an `elicitation/create` back to the client) and the gate's
    /// one-question-at-a-time order.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .catalog
            .entries()
            .map(|e| {
                let spec = e.tool.spec();
                listed(&spec.name, &spec.description, &spec.input_schema, e.tier)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.call(request, &context).await.into())
    }
}
