//! The README's "Try it" block, run as a reader runs it: each `curl` line against the binary
//! (its address for `localhost:8080`), the callback receiver it starts (a free port for 9999),
//! and every answer the block shows checked against the one given: the HTTP answer first,
//! then what the receiver prints. The starter's first block likewise, against a copy of the
//! starter made as its README says (by `scripts/test --full`). A call id or a duration the server makes up is any UUID or
//! any number; an answer shown ending in `…` is the start of the real one. A line this test
//! cannot run fails it, so the block cannot drift from what it promises.

use crate::common;

use serde_json::Value;
use std::time::Duration;

/// One command of the block and the answers shown under it.
struct Step {
    words: Vec<String>,
    answers: Vec<String>,
}

/// The commands of the first ```sh block under `heading`, joined across `\` and quoted newlines.
fn steps(readme: &str, heading: &str) -> Vec<Step> {
    let section = &readme[readme.find(heading).expect("the heading")..];
    let block = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("a sh block")
        .0;
    let mut steps: Vec<Step> = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        if pending.is_empty() && line.starts_with('#') {
            let shown = line.trim_start_matches('#').trim();
            if shown.starts_with('{') {
                steps
                    .last_mut()
                    .expect("a command")
                    .answers
                    .push(shown.into());
            }
            continue;
        }
        if pending.is_empty() && line.trim().is_empty() {
            continue;
        }
        pending.push_str(line.strip_suffix('\\').unwrap_or(line));
        pending.push('\n');
        // Complete once no quote is open and the line does not go on.
        if !line.ends_with('\\') && pending.matches('\'').count().is_multiple_of(2) {
            let command = std::mem::take(&mut pending);
            let words = shlex::split(command.split(" #").next().unwrap())
                .unwrap_or_else(|| panic!("not a shell command: {command}"));
            steps.push(Step {
                words,
                answers: Vec::new(),
            });
        }
    }
    assert!(pending.is_empty(), "an unfinished command: {pending}");
    steps
}

fn is_uuid(v: &Value) -> bool {
    v.as_str().is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// Whether `actual` is the answer `shown` (see the module's text for what may differ).
fn matches(actual: &Value, shown: &Value, key: &str) -> bool {
    match (actual, shown) {
        (Value::Number(_), Value::Number(_)) if key == "duration" => true,
        (a, s) if key == "call_id" && is_uuid(a) && is_uuid(s) => true,
        (Value::Object(a), Value::Object(s)) => {
            a.len() == s.len()
                && s.iter()
                    .all(|(k, v)| a.get(k).is_some_and(|got| matches(got, v, k)))
        }
        (Value::Array(a), Value::Array(s)) => {
            a.len() == s.len() && a.iter().zip(s).all(|(a, s)| matches(a, s, ""))
        }
        (a, s) => a == s,
    }
}

fn check(actual: &str, shown: &str) {
    if let Some(start) = shown.strip_suffix('…') {
        assert!(actual.starts_with(start), "shown:\n{shown}\ngot:\n{actual}");
        return;
    }
    let actual_json: Value =
        serde_json::from_str(actual).unwrap_or_else(|e| panic!("not JSON ({e}): {actual}"));
    let shown_json: Value =
        serde_json::from_str(shown).unwrap_or_else(|e| panic!("the README's {shown}: {e}"));
    assert!(
        matches(&actual_json, &shown_json, ""),
        "shown:\n{shown}\ngot:\n{actual}"
    );
}

/// A curl line's request over `addr`: (method, path, headers, body).
fn request(words: &[String], addr: &str) -> (String, String, String, String) {
    let mut headers = format!("Host: {addr}\r\n");
    let (mut url, mut body) = (None, None);
    let mut args = words[1..].iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-s" => {}
            "-H" => headers += &format!("{}\r\n", args.next().unwrap()),
            "-d" => body = Some(args.next().unwrap().clone()),
            other if other.starts_with("localhost:8080") => url = Some(other.to_owned()),
            other => panic!("a curl argument this test does not know: {other}"),
        }
    }
    let path = url.expect("a URL on localhost:8080")["localhost:8080".len()..].to_owned();
    let method = if body.is_some() { "POST" } else { "GET" };
    (method.into(), path, headers, body.unwrap_or_default())
}

/// Runs the commands of `page`'s block under `heading`: `server` is the program a `cargo run`
/// line starts (with the line's variables), or that is started first when the block has none.
async fn run_block(page: &str, heading: &str, server: &str) {
    let text = std::fs::read_to_string(format!("{}/{page}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let steps = steps(&text, heading);
    assert!(steps.len() >= 3, "{page}: the block was read");
    let start = |env: &[(&str, &str)]| {
        let (process, base) = common::start_binary(server, env);
        (process, base.trim_start_matches("http://").to_owned())
    };
    let runs = |s: &Step| s.words.iter().any(|w| w == "run") && s.words.contains(&"cargo".into());
    let mut server = (!steps.iter().any(runs)).then(|| start(&[]));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let mut receiver: Option<common::Process> = None;
    for step in steps {
        let words: Vec<String> = step
            .words
            .iter()
            .map(|w| w.replace("9999", &port))
            .collect();
        // Leading `NAME=value` words are the command's environment.
        let assigned = words
            .iter()
            .take_while(|w| w.contains('=') && !w.starts_with('-'));
        let env: Vec<(&str, &str)> = assigned.map(|w| w.split_once('=').unwrap()).collect();
        let command = &words[env.len()..];
        match command[0].as_str() {
            // Done by scripts/test before this test runs: the copy and its tests.
            "scripts/new-tools" => assert!(page.starts_with("examples/starter")),
            "cargo" if command[1] == "test" => assert!(page.starts_with("examples/starter")),
            "cargo" if command[1] == "run" => server = Some(start(&env)),
            "curl" => {
                let addr = &server.as_ref().expect("a server runs").1;
                let (method, path, headers, body) = request(command, addr);
                let (_, answer) =
                    common::http_raw_with(addr, &method, &path, &headers, &body).await;
                let mut shown = step.answers.iter();
                if let Some(first) = shown.next() {
                    check(&answer, first);
                }
                // What a receiver prints follows the HTTP answer, in order.
                for (i, want) in shown.enumerate() {
                    let receiver = receiver.as_ref().expect("a receiver prints the rest");
                    let mut waited = Duration::ZERO;
                    let printed = loop {
                        let output = receiver.output();
                        if let Some(line) = output.lines().nth(i) {
                            break line.to_owned();
                        }
                        assert!(waited < Duration::from_secs(10), "the receiver got nothing");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        waited += Duration::from_millis(20);
                    };
                    check(&printed, want);
                }
            }
            "python3" if command[1] == "examples/rap_receiver.py" => {
                assert_eq!(command.last().unwrap(), "&", "started in the background");
                let mut python = std::process::Command::new("python3");
                python
                    .arg(format!("{}/{}", env!("CARGO_MANIFEST_DIR"), command[1]))
                    .args(&command[2..command.len() - 1]);
                let (process, line) = common::Process::start("rap_receiver", python);
                assert!(line.contains(&port), "{line}");
                receiver = Some(process);
            }
            _ => panic!("a line of {page} this test does not know how to run: {words:?}"),
        }
    }
}

#[tokio::test]
async fn every_answer_the_readmes_try_it_block_shows_is_the_servers() {
    run_block("README.md", "## Try it", env!("CARGO_BIN_EXE_oxp-lambda")).await;
}

#[tokio::test]
#[ignore = "needs a copy of the starter made and built by scripts/test --full (OXP_TEST_STARTER names its binary)"]
async fn a_copy_of_the_starter_answers_its_first_calls_as_its_readme_shows() {
    let program = std::env::var("OXP_TEST_STARTER")
        .expect("OXP_TEST_STARTER: the copy's binary, built by scripts/test --full");
    run_block("examples/starter/README.md", "# A tool server", &program).await;
}
