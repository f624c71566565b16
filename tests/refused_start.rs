//! Starts the binary refuses, each with one line naming what to change: a setting that does
//! not parse, a state or dead-letter file it cannot use, an authentication that cannot work
//! here, an address another process holds.

use crate::common;

use std::process::Command;

/// What the binary, run locally with `env`, says as it refuses to start (it must, and start no
/// server).
fn refused_start(env: &[(&str, &str)]) -> String {
    // A folder of its own: a start refused after the state's lock was taken took the default
    // `./oxp-state.redb.lock`, left in the repository and contended by the tests beside it.
    let scratch = common::Scratch::new("refused-start");
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .current_dir(scratch.path())
        .envs(env.iter().copied());
    let output = command.output().unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no server started");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn invalid_configuration_fails_at_start_naming_the_variable() {
    let stderr = refused_start(&[("OXP_MAX_BODY_BYTES", "lots")]);
    assert!(stderr.contains("OXP_MAX_BODY_BYTES"), "{stderr}");
}

#[test]
fn a_state_file_that_does_not_open_fails_the_start_naming_it() {
    // Another file named (or one damaged past repair): the server served, and refused every
    // invocation, answer and subscription as "retry later", its health answering ok.
    let file = std::env::temp_dir().join(format!("oxp-not-a-db-{}.redb", uuid::Uuid::new_v4()));
    std::fs::write(&file, vec![7u8; 64 * 1024]).unwrap();
    let path = file.to_str().unwrap();
    let stderr = refused_start(&[("OXP_STATE_PATH", path), ("OXP_PORT", "0")]);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(format!("{path}.lock"));
    assert!(
        stderr.contains(&format!("OXP_STATE_PATH {path} does not open")),
        "{stderr}"
    );
    assert!(
        stderr.contains("move this one aside"),
        "what to do: {stderr}"
    );
}

#[test]
fn a_dead_letter_file_that_cannot_be_written_fails_the_start_naming_it() {
    // Every result given up would be lost, found out only when the first one was.
    let file = format!("/nonexistent-{}/letters.jsonl", uuid::Uuid::new_v4());
    let stderr = refused_start(&[("OXP_RAP_DEAD_LETTER_FILE", &file), ("OXP_PORT", "0")]);
    let refused = format!("OXP_RAP_DEAD_LETTER_FILE {file} cannot be written: No such file");
    assert!(stderr.contains(&refused), "{stderr}");
    let folder = std::env::temp_dir().display().to_string();
    let stderr = refused_start(&[("OXP_RAP_DEAD_LETTER_FILE", &folder), ("OXP_PORT", "0")]);
    assert!(
        stderr.contains("cannot be written: Is a directory"),
        "{stderr}"
    );
    // A folder that exists and takes no file (as a read-only filesystem's; the tests may run
    // as root, whom a folder's mode does not stop): the server started, each letter then lost.
    let stderr = refused_start(&[
        ("OXP_RAP_DEAD_LETTER_FILE", "/proc/oxp-letters.jsonl"),
        ("OXP_PORT", "0"),
    ]);
    assert!(
        stderr.contains("OXP_RAP_DEAD_LETTER_FILE /proc/oxp-letters.jsonl cannot be written"),
        "{stderr}"
    );
}

#[test]
fn a_state_file_in_a_folder_that_does_not_exist_fails_the_start_naming_oxp_state_path() {
    // It said "state: cannot create /nonexistent/state.redb.lock", naming no setting.
    let file = format!("/nonexistent-{}/state.redb", uuid::Uuid::new_v4());
    let stderr = refused_start(&[("OXP_STATE_PATH", &file), ("OXP_PORT", "0")]);
    assert!(
        stderr.contains(&format!("OXP_STATE_PATH {file}: ")),
        "{stderr}"
    );
    assert!(stderr.contains("No such file or directory"), "{stderr}");
}

#[test]
fn a_local_server_with_api_gateway_authentication_refuses_to_start_naming_oxp_auth() {
    // It would answer every request 401: the authorizer's claims come only in Lambda events.
    let stderr = refused_start(&[("OXP_AUTH", "apigateway"), ("OXP_PORT", "0")]);
    assert!(stderr.contains("OXP_AUTH: 'apigateway'"), "{stderr}");
}

#[test]
fn an_address_another_process_holds_fails_the_start_naming_what_chooses_it() {
    // `cargo run` twice, or another server on 8080: it said only "Address already in use".
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let stderr = refused_start(&[("OXP_PORT", &port)]);
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("OXP_HOST and OXP_PORT, or --port"),
        "{stderr}"
    );
}
