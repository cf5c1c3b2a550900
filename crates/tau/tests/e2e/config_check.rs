//! `tau config check` finds what `tau chat` would stumble on in `[model]`, and what
//! `tau serve` refuses at start (routines: their tools and the tools' schemas, webhook
//! secrets, `ask` channels) with the same words, without connecting to or writing anything.

use crate::common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn a_model_value_out_of_range_is_an_error_naming_its_key() {
    let tau = Tau::new();
    let config = tau.config("[model]\nspec = \"ollama:llama3.2\"\ntemperature = 3\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "config", "check"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: invalid model.temperature: must be between 0.0 and 2.0, got 3\n",
                config.display()
            )
        )
    );
    // A bad value comes before a missing key: it is what the file says that is wrong.
    let config = tau.config("[model]\nspec = \"openai:gpt-4o-mini\"\nmax_tokens = 0\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "config", "check"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: invalid model.max_tokens: must be between 1 and 1000000, got 0\n",
                config.display()
            )
        )
    );
}

#[test]
fn a_missing_api_key_is_an_error_and_a_present_one_is_never_shown() {
    let tau = Tau::new();
    let config = tau.config("[model]\nspec = \"openai:gpt-4o-mini\"\n");
    let args = ["--config", config.to_str().unwrap(), "config", "check"];
    let run = tau.run(&args, "");
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            "tau: openai:gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY\n"
                .to_owned()
        )
    );
    let run = tau.run_env(&args, &[("OPENAI_API_KEY", "sk-very-secret-1234")], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("[model]\nspec = \"openai:gpt-4o-mini\"\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("very-secret"), "{}", run.stdout);
    assert!(!tau.home().exists(), "checking writes nothing");
}

#[test]
fn a_model_named_on_the_command_line_is_checked_too() {
    let tau = Tau::new();
    let run = tau.run(&["--model", "teleport:x", "config", "check"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("tau: invalid model.spec: "),
        "{}",
        run.stderr
    );
}

const DOORBELL: &str = "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\ntool = \"append_note\"\narguments = { text = \"ding\" }\n";

/// What is wrong, what `tau.toml` holds beyond a hub on a free port (`{HOME}`: the
/// person's home directory), the environment.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Every config error `tau serve` refuses at start once the file reads, each refused by
/// `tau config check` with the same words and marked `no` by `tau doctor` with them too:
/// the three run one check (`start_checks::check` in the binary), so they cannot drift apart.
#[test]
fn what_tau_serve_refuses_at_start_config_check_and_doctor_refuse_with_the_same_words() {
    let cases: [Case; 13] = [
        ("a webhook secret that is not set", DOORBELL, &[]),
        (
            "a webhook secret too short",
            DOORBELL,
            &[("TAU_TEST_DOORBELL", "short")],
        ),
        (
            "arguments the tool's schema refuses",
            "[[routines]]\nname = \"note\"\nevery = \"1h\"\ntool = \"append_note\"\narguments = { text = 3 }\n",
            &[],
        ),
        (
            "an argument the tool does not take",
            "[[routines]]\nname = \"note\"\nevery = \"1h\"\ntool = \"append_note\"\narguments = { text = \"x\", colour = \"red\" }\n",
            &[],
        ),
        (
            "a tool that does not exist",
            "[[routines]]\nname = \"coffee\"\nevery = \"1h\"\ntool = \"make_coffee\"\n",
            &[],
        ),
        (
            "an ask channel tau serve does not run",
            "[[routines]]\nname = \"tick\"\nevery = \"1h\"\nprompt = \"tick\"\nask = \"telegram\"\n",
            &[],
        ),
        (
            "a time zone that does not exist",
            "[tools.clock]\nzone = \"Mars/Olympus\"\n",
            &[],
        ),
        ("no channel to serve", "enabled = false\n", &[]),
        (
            "a Telegram token that is not set",
            "[telegram]\nowners = [424242]\n",
            &[],
        ),
        (
            "a broker password that is not set",
            "[tools.mqtt]\npassword_env = \"TAU_TEST_MQTT_PASSWORD\"\n",
            &[],
        ),
        (
            "a workspace that is the person's home",
            "[tools]\nworkspace = \"{HOME}\"\n",
            &[],
        ),
        (
            "a model whose key is not set",
            "[model]\nspec = \"openai:gpt-4o-mini\"\n",
            &[],
        ),
        (
            "a model value out of range",
            "[model]\ntemperature = 3\n",
            &[],
        ),
    ];
    let mut said = String::new();
    for (what, extra, env) in cases {
        let tau = Tau::new();
        let person = tau.dir.path().to_str().unwrap();
        let config = tau.serve_config(&extra.replace("{HOME}", person));
        let model = tau.replay(&json!([answer("unused")]));
        let mut args = vec!["--config", config.to_str().unwrap()];
        // `--model` would override the spec these cases set.
        if !extra.contains("[model]") {
            args.extend(["--model", &model]);
        }
        let check = tau.run_env(&[&args[..], &["config", "check"]].concat(), env, "");
        assert!(!tau.home().exists(), "{what}: checking writes nothing");
        let serve = tau.run_env(&[&args[..], &["serve"]].concat(), env, "");
        assert!(
            !tau.home().exists(),
            "{what}: serve refuses before it writes"
        );
        assert_eq!(
            (check.code, &check.stderr),
            (2, &serve.stderr),
            "{what}: config check and serve disagree ({} then {})",
            check.code,
            serve.code
        );
        assert_eq!(serve.code, 2, "{what}: {}", serve.stderr);
        let doctor = tau.run_env(&[&args[..], &["doctor"]].concat(), env, "");
        let refusal = serve.stderr.strip_prefix("tau: ").unwrap().trim_end();
        assert!(
            doctor
                .stdout
                .contains(&format!("\n  no  checks       {refusal}\n")),
            "{what}: doctor does not say {refusal:?}:\n{}",
            doctor.stdout
        );
        assert_eq!(doctor.code, 1, "{what}: {}", doctor.stdout);
        assert!(!tau.home().exists(), "{what}: the doctor writes nothing");
        said.push_str(&format!(
            "{what}:\n{}\n",
            check
                .stderr
                .replace(config.to_str().unwrap(), "tau.toml")
                .replace(person, "HOME")
        ));
    }
    insta::assert_snapshot!(said);
}

#[test]
fn routines_serve_can_run_pass_and_an_mcp_tool_is_said_to_be_checked_when_connected() {
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "{DOORBELL}[[routines]]\nname = \"lights\"\nevery = \"1h\"\ntool = \"home__lights_off\"\n\
         [mcp.servers.home]\nurl = \"http://127.0.0.1:9/mcp\"\n"
    ));
    let run = tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            "ollama:llama3.2",
            "config",
            "check",
        ],
        &[("TAU_TEST_DOORBELL", "a-doorbell-secret-long-enough")],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let head: Vec<&str> = run.stdout.lines().take(3).collect();
    assert_eq!(
        head,
        vec![
            format!("# effective config (from {})", config.display()).as_str(),
            "# routines.lights: the arguments of home__lights_off are checked against its schema when tau connects to the MCP server 'home' (tau serve, tau routines)",
            "[model]",
        ]
    );
    assert!(!run.stdout.contains("long-enough"), "{}", run.stdout);
    assert!(!tau.home().exists(), "checking writes nothing");
}

#[test]
fn with_no_model_set_the_effective_model_is_none() {
    let tau = Tau::new();
    let run = tau.run(&["config", "check"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let model: String = run
        .stdout
        .lines()
        .take_while(|line| !line.is_empty())
        .map(|line| format!("{line}\n"))
        .collect();
    insta::assert_snapshot!(model);
    assert!(
        !run.stdout.lines().any(|line| line.starts_with("spec = ")),
        "{}",
        run.stdout
    );
    // What `tau chat` says then: it does not start.
    let chat = tau.run(&["chat"], "hi\n");
    assert_eq!(chat.code, 2, "{}", chat.stderr);
}
