//! MCP servers as tool providers, end to end: `tau chat` with a replay model calls the tools
//! of real MCP servers (PyPI's `mcp-server-time`, and a small server that lies about its
//! tools) through the gate, with tiers from tau's manifest only.

use crate::common;

use common::peers;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn refusal(tool: &str) -> String {
    format!(
        "The user did not approve this action: {tool}. Do not perform it; tell the user briefly."
    )
}

/// A `[mcp.servers.NAME]` table that starts a Python peer.
fn python_server(python: &str, name: &str, args: &[&str], rest: &str) -> String {
    format!(
        "[mcp.servers.{name}]\ncommand = {}\nargs = {}\n{rest}\n",
        json!(python),
        json!(args)
    )
}

/// The text of the tool result for `tool_use_id` in a stored session.
fn result_of(messages: &Value, tool_use_id: &str) -> (Value, String) {
    messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter_map(|block| block.get("toolResult"))
        .find(|r| r["toolUseId"] == tool_use_id)
        .map(|r| {
            (
                r["status"].clone(),
                r["content"][0]["text"].as_str().unwrap().to_owned(),
            )
        })
        .unwrap()
}

#[test]
fn a_real_time_server_runs_tier_0_and_asks_before_tier_2() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config(&python_server(
        &python,
        "time",
        &[
            "-m",
            "mcp_server_time",
            "--local-timezone",
            "Europe/Istanbul",
        ],
        "tools = { get_current_time = 0 }",
    ));
    let convert = json!({"time": "16:30", "source_timezone": "Europe/Istanbul", "target_timezone": "Asia/Tokyo"});
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "time__get_current_time",
            &json!({"timezone": "Europe/Istanbul"})
        ),
        answer("Here is the time."),
        tool_call("t2", "time__convert_time", &convert),
        answer("I did not convert it."),
    ]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "what time is it in Istanbul?\nand in Tokyo?\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout.contains(
            "  │ tool       time__convert_time\n  │ effect     calls convert_time on the MCP server time\n  │ ⚠ source: source_timezone: \"Europe/Istanbul\" first appeared in the result ↩\n  │   of time__get_current_time (call t1), not in anything you typed\n  │ · sandbox: the MCP server time: writes: workspace only · network: none\n  │ arguments\n  │   source_timezone (15 chars): \"Europe/Istanbul\"\n  │   target_timezone (10 chars): \"Asia/Tokyo\"\n  │   time (5 chars): \"16:30\"\n"
        ),
        "{}",
        run.stdout
    );

    let messages = tau.session_json("s1");
    let (status, text) = result_of(&messages, "t1");
    assert_eq!(status, json!("success"));
    let now: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&now["timezone"], now["datetime"].is_string()),
        (&json!("Europe/Istanbul"), true)
    );
    assert_eq!(
        result_of(&messages, "t2"),
        (json!("error"), refusal("time__convert_time"))
    );

    let events: Vec<Value> = tau
        .audit_events()
        .into_iter()
        .map(|mut e| {
            if e["tool_use_id"] == "t1" {
                e["result_summary"] = json!("<now>");
            }
            e
        })
        .collect();
    let mut events = events;
    if let Some(asked) = events
        .iter_mut()
        .find(|e| e["type"] == "approval_requested")
    {
        take_grant_offer(asked);
    }
    let turn_end = json!({"type": "turn_end", "stop_reason": "end_turn", "model_calls": 2, "input_tokens": 0, "output_tokens": 0});
    // The time server's answer is outside text: the zone it named is flagged where it
    // comes back as an argument.
    let read = json!({"type": "tool_result", "tool": "time__get_current_time", "call_id": "t1"});
    let provenance = json!({"read": [read.clone()], "flagged": [
        {"argument": "/source_timezone", "value": "Europe/Istanbul", "source": read}]});
    assert_eq!(
        events,
        vec![
            json!({"type": "tool_call", "tool": "time__get_current_time", "tier": 0, "tool_use_id": "t1", "arguments": {"timezone": "Europe/Istanbul"}, "status": "success", "approval": "not_required", "decided_by": {"kind": "policy"}, "result_summary": "<now>"}),
            turn_end.clone(),
            json!({"type": "approval_requested", "approval_id": "ap_1", "tool": "time__convert_time", "tier": 2, "effect": "calls convert_time on the MCP server time", "call_id": "t2", "arguments": convert, "channel": "terminal", "card": {"notes": [
                {"level": "warning", "label": "source", "text": "source_timezone: \"Europe/Istanbul\" first appeared in the result of time__get_current_time (call t1), not in anything you typed"},
                {"level": "info", "label": "sandbox", "text": "the MCP server time: writes: workspace only · network: none"}],
                "provenance": provenance.clone()}}),
            json!({"type": "approval", "approval_id": "ap_1", "tool": "time__convert_time", "tier": 2, "tool_use_id": "t2", "arguments": convert, "decision": "rejected", "decided_by": {"kind": "person", "channel": "terminal"}, "approver": "terminal", "channel": "terminal", "provenance": provenance.clone()}),
            json!({"type": "tool_call", "tool": "time__convert_time", "tier": 2, "tool_use_id": "t2", "arguments": convert, "status": "refused", "approval": "rejected", "decided_by": {"kind": "person", "channel": "terminal"}, "approval_id": "ap_1", "result_summary": refusal("time__convert_time"), "provenance": provenance}),
            turn_end,
        ]
    );
}

#[test]
fn a_server_that_claims_tier_0_for_a_destructive_tool_still_asks() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let proof = tau.dir.path().join("wiped.txt");
    let config = tau.config(&python_server(
        &python,
        "sly",
        &[&peers::script("sly_server.py"), proof.to_str().unwrap()],
        "tools = { whoami = 0 }",
    ));
    let model = tau.replay(&json!([
        tool_call("t1", "sly__wipe_disk", &json!({})),
        answer("It was not wiped."),
    ]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "tidy up\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("  ┌─ approval needed · tier 2\n  │ tool       sly__wipe_disk\n"),
        "{}",
        run.stdout
    );
    assert!(!proof.exists(), "the destructive tool never ran");
    assert_eq!(
        result_of(&tau.session_json("s1"), "t1"),
        (json!("error"), refusal("sly__wipe_disk"))
    );
    assert_eq!(
        tau.audit_events()[1],
        json!({"type": "approval", "approval_id": "ap_1", "tool": "sly__wipe_disk", "tier": 2, "tool_use_id": "t1", "arguments": {}, "decision": "rejected", "decided_by": {"kind": "person", "channel": "terminal"}, "approver": "terminal", "channel": "terminal"})
    );
}

#[test]
fn tools_lists_mcp_tools_with_their_tiers_and_warns_of_the_rest() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let proof = tau.dir.path().join("wiped.txt");
    let config = tau.config(&format!(
        "{}{}[mcp.servers.broken]\ncommand = \"/nonexistent/tau-test-server\"\n",
        python_server(
            &python,
            "sly",
            &[&peers::script("sly_server.py"), proof.to_str().unwrap()],
            "tools = { whoami = 0, \"get.weather now\" = 0, not_listed = 1 }",
        ),
        python_server(
            &python,
            "time",
            &["-m", "mcp_server_time"],
            "tools = { get_current_time = 0 }\ndefault_tier = 1"
        ),
    ));
    let run = tau.run(&["--config", config.to_str().unwrap(), "tools"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mcp_lines: Vec<&str> = run.stdout.lines().filter(|l| l.contains("__")).collect();
    let hints = "(server hints: destructiveHint=false, idempotentHint=true, openWorldHint=false, readOnlyHint=true)";
    assert_eq!(
        mcp_lines,
        vec![
            "sly__crash                 2  calls crash on the MCP server sly".to_owned(),
            "sly__get_weather_now       0  calls get.weather now on the MCP server sly".to_owned(),
            "sly__slow                  2  calls slow on the MCP server sly".to_owned(),
            "sly__whoami                0  calls whoami on the MCP server sly (server hints: readOnlyHint=true)".to_owned(),
            "sly__wipe_disk             2  calls wipe_disk on the MCP server sly (server hints: destructiveHint=false, readOnlyHint=true)".to_owned(),
            format!("time__convert_time         1  calls convert_time on the MCP server time {hints}"),
            format!("time__get_current_time     0  calls get_current_time on the MCP server time {hints}"),
        ]
    );
    assert_eq!(
        run.stderr,
        format!(
            "tau: warning: MCP server 'broken' cannot start \"/nonexistent/tau-test-server\": No such file or directory (os error 2); going on without its tools\n\
             tau: warning: MCP server 'sly' lists a tool named \"{}…\" that cannot be made a valid tool name; it is skipped\n\
             tau: warning: MCP server 'sly' does not list the tool 'not_listed' named in its tier manifest\n",
            "x".repeat(64)
        )
    );
}

#[test]
fn a_server_that_hangs_or_dies_gives_error_results_and_the_chat_goes_on() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let proof = tau.dir.path().join("wiped.txt");
    let config = tau.config(&python_server(
        &python,
        "sly",
        &[&peers::script("sly_server.py"), proof.to_str().unwrap()],
        "tools = { slow = 0, crash = 0, whoami = 0 }\ntimeout_seconds = 2",
    ));
    let model = tau.replay(&json!([
        tool_call("t1", "sly__slow", &json!({})),
        tool_call("t2", "sly__crash", &json!({})),
        tool_call("t3", "sly__whoami", &json!({})),
        answer("The server is gone."),
        answer("Still here."),
    ]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--session",
            "s1",
        ],
        "go\nare you there?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("tau> Still here.\n"), "{}", run.stdout);
    let hung = "the MCP server 'sly' did not answer within 2 s; whether the call ran is unknown";
    let gone = "the MCP server 'sly' failed: Transport closed";
    let messages = tau.session_json("s1");
    assert_eq!(
        ["t1", "t2", "t3"].map(|id| result_of(&messages, id)),
        [
            (json!("error"), format!("Error: {hung}")),
            (json!("error"), format!("Error: {gone}")),
            (json!("error"), format!("Error: {gone}")),
        ]
    );
    let errors: Vec<Value> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "error")
        .collect();
    assert_eq!(
        errors,
        vec![
            json!({"type": "error", "where": "mcp_server", "message": hung, "tool": "sly__slow", "tool_use_id": "t1"}),
            json!({"type": "error", "where": "mcp_server", "message": gone, "tool": "sly__crash", "tool_use_id": "t2"}),
            json!({"type": "error", "where": "mcp_server", "message": gone, "tool": "sly__whoami", "tool_use_id": "t3"}),
        ]
    );
}

#[test]
fn a_server_that_fails_to_start_is_skipped_with_a_warning_and_an_error_event() {
    let tau = Tau::new();
    let config = tau.config("[mcp.servers.broken]\ncommand = \"/nonexistent/tau-test-server\"\n");
    let model = tau.replay(&json!([answer("Hello.")]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--session",
            "s1",
        ],
        "hi\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let message = "MCP server 'broken' cannot start \"/nonexistent/tau-test-server\": No such file or directory (os error 2)";
    assert_eq!(
        run.stderr,
        format!("tau: warning: {message}; going on without its tools\n")
    );
    assert!(run.stdout.contains("tau> Hello.\n"), "{}", run.stdout);
    assert_eq!(
        tau.audit_events()[0],
        json!({"type": "error", "where": "mcp_server", "message": message})
    );
}

#[test]
fn manifest_tiers_that_are_not_0_1_or_2_are_config_errors_naming_the_tool() {
    let tau = Tau::new();
    for (value, shown) in [
        ("true", "true"),
        ("3", "3"),
        ("1.0", "1.0"),
        ("\"0\"", "\"0\""),
    ] {
        let config = tau.config(&format!(
            "[mcp.servers.time]\ncommand = \"mcp-server-time\"\ntools = {{ get_current_time = {value} }}\n"
        ));
        let run = tau.run(&["--config", config.to_str().unwrap(), "tools"], "");
        assert_eq!(run.code, 2, "{value}: {}", run.stderr);
        assert_eq!(
            run.stderr,
            format!(
                "tau: {}: mcp.servers.time.tools.get_current_time: tier for tool 'get_current_time' must be 0, 1 or 2, got {shown}\n",
                config.display()
            )
        );
    }
    assert!(!tau.home().exists(), "nothing is written");
}

#[test]
fn the_everything_server_from_npm_runs_tier_0_and_asks_before_tier_2() {
    let Some(everything) = peers::npm_bin("mcp-server-everything") else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config(&format!(
        "[mcp.servers.everything]\ncommand = {}\ntools = {{ echo = 0 }}\n",
        json!(everything)
    ));
    let model = tau.replay(&json!([
        tool_call("t1", "everything__echo", &json!({"message": "hello"})),
        tool_call("t2", "everything__get-tiny-image", &json!({})),
        tool_call("t3", "everything__get-sum", &json!({"a": 2, "b": 3})),
        answer("Done."),
    ]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "echo, show and add\ny\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let messages = tau.session_json("s1");
    assert_eq!(
        ["t1", "t3"].map(|id| result_of(&messages, id)),
        [
            (json!("success"), "Echo: hello".to_owned()),
            (json!("error"), refusal("everything__get-sum")),
        ]
    );
    let image = messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter_map(|block| block.get("toolResult"))
        .find(|r| r["toolUseId"] == "t2")
        .unwrap();
    assert_eq!(image["status"], json!("success"));
    assert!(
        image["content"]
            .as_array()
            .unwrap()
            .contains(&json!({"text": "[image, image/png]"})),
        "{image}"
    );
    let decisions: Vec<(Value, Value)> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| (e["tool"].clone(), e["decision"].clone()))
        .collect();
    assert_eq!(
        decisions,
        vec![
            (json!("everything__get-tiny-image"), json!("approved")),
            (json!("everything__get-sum"), json!("rejected")),
        ]
    );
}

#[test]
fn a_server_over_http_with_a_token_is_used_like_any_other() {
    // The server is another tau, served over streamable HTTP: its own gate still decides.
    let remote = Tau::new();
    let remote_config = remote.config("[mcp.server]\ntoken_env = \"TAU_MCP_TOKEN\"\n");
    let server = peers::HttpTau::start(
        &remote,
        &["--config", remote_config.to_str().unwrap()],
        &[("TAU_MCP_TOKEN", "s3cret")],
    );
    let tau = Tau::new();
    let config = tau.config(&format!(
        "[mcp.servers.other]\nurl = {}\ntoken_env = \"OTHER_TOKEN\"\ntools = {{ clock = 0 }}\n",
        json!(server.url)
    ));
    let model = tau.replay(&json!([
        tool_call("t1", "other__clock", &json!({})),
        tool_call(
            "t2",
            "other__run_command",
            &json!({"command": "touch proof.txt"})
        ),
        answer("Done."),
    ]));
    let mut child = tau
        .command(&[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ])
        .env("OTHER_TOKEN", "s3cret")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"time and a file\ny\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let messages = tau.session_json("s1");
    let (status, text) = result_of(&messages, "t1");
    assert_eq!(status, json!("success"));
    assert!(
        serde_json::from_str::<Value>(&text).unwrap()["rfc3339"].is_string(),
        "{text}"
    );
    // Approved here, refused there: the remote tau's client (this tau) cannot be asked,
    // and the remote says so rather than that somebody said no.
    assert_eq!(
        result_of(&messages, "t2"),
        (
            json!("error"),
            "Tool 'run_command' was not run: it needs the user's approval, and this MCP client cannot ask (it lacks elicitation), so nobody was asked. Tell the user it needs a client with elicitation.".to_owned()
        )
    );
    assert!(!remote.workspace().join("proof.txt").exists());
    let remote_calls: Vec<(Value, Value)> = remote
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| (e["tool"].clone(), e["status"].clone()))
        .collect();
    assert_eq!(
        remote_calls,
        vec![
            (json!("clock"), json!("success")),
            (json!("run_command"), json!("refused"))
        ]
    );
}

/// Takes the grant offer off a terminal question's audit line and checks it is the one for
/// exactly that call: the hashes of its arguments and card, 24 hours.
fn take_grant_offer(event: &mut Value) {
    let offer = event
        .as_object_mut()
        .and_then(|e| e.remove("grant"))
        .expect("the terminal's question offers a grant");
    assert_eq!(
        offer["arguments_sha256"],
        json!(tau_state::canonical_arguments(&event["arguments"]).1)
    );
    // A grant covers the tools' card: what tau adds for one question (where its values
    // came from) is not part of it.
    let mut tools_card = event["card"].clone();
    if let Some(card) = tools_card.as_object_mut() {
        card.remove("provenance");
        if let Some(Value::Array(notes)) = card.get_mut("notes") {
            notes.retain(|note| note["label"] != "source");
        }
    }
    assert_eq!(
        offer["card_sha256"],
        json!(tau_state::canonical_arguments(&tools_card).1)
    );
    assert_eq!(offer["schema_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(offer["hours"], json!(24));
}
