//! RAP's protections: where a callback may point, each caller's rate and share, the audit
//! line, a caller acting only for itself.

use crate::common;
use common::rap::*;

use common::receiver::Receiver;
use common::*;
use oxp_lambda::Config;
use oxp_lambda::config::AuthConfig;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::test]
async fn in_lambda_mode_callbacks_must_be_https_to_a_public_address() {
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_loopback = false;
    })
    .await;
    let receiver = Receiver::ok().await;
    for url in [
        receiver.url.as_str(),
        "https://127.0.0.1/callback",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.1.2.3/callback",
        "https://[::1]/callback",
        "http://agent.example.com/callback",
    ] {
        let reply = rig
            .invoke(invocation(url, "Calculator_Add", json!({"a": 1, "b": 2})))
            .await;
        assert_eq!(reply.status, 400, "{url}: {}", reply.text);
        assert_eq!(reply.json["error"]["kind"], "callback_refused", "{url}");
    }
    rig.settle().await;
    assert!(receiver.hits().is_empty());
}

#[tokio::test]
async fn a_host_name_that_resolves_to_a_refused_address_is_refused_when_connecting() {
    // Lambda rules with plain http allowed, so only the resolved-address check can refuse.
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_http = true;
        r.callbacks.allow_loopback = false;
    })
    .await;
    let receiver = Receiver::ok().await;
    let via_name = receiver.url.replace("127.0.0.1", "localhost");
    rig.accept(invocation(
        &via_name,
        "Calculator_Add",
        json!({"a": 1, "b": 2}),
    ))
    .await;
    rig.settle().await;
    assert!(receiver.hits().is_empty(), "nothing was sent to loopback");
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    let reason = letters[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("refused") && reason.contains("loopback"),
        "{reason}"
    );
}

#[tokio::test]
async fn loopback_callbacks_are_allowed_in_lambda_only_when_configured() {
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_http = true;
        r.callbacks.allow_loopback = true;
    })
    .await;
    let receiver = Receiver::ok().await;
    rig.accept(add(&receiver.url)).await;
    assert_eq!(receiver.result().await["text"], "3");
}

#[tokio::test]
async fn the_callback_host_allow_list_is_enforced() {
    let rig = Rig::with_rap(|r| r.callbacks.allowed_hosts = vec!["agent.example.com".into()]).await;
    let receiver = Receiver::ok().await;
    let reply = rig.invoke(add(&receiver.url)).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allow-list")
    );
}

#[tokio::test]
async fn invocations_are_rate_limited_per_caller() {
    let rig = Rig::build(
        |c| {
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            }
        },
        |r| {
            r.rate_limit = Some(oxp_lambda::config::RateLimit {
                invocations: 2,
                per: Duration::from_secs(60),
            })
        },
    )
    .await;
    let receiver = Receiver::ok().await;
    // The third of Alice's invocations is over the limit, whatever user_id it names: refused
    // with 429 before anything is queued, so nothing runs and nothing is delivered for it.
    for (caller, id, user, status) in [
        ("alice", "call_1", "u1", 200),
        ("alice", "call_2", "u2", 200),
        ("alice", "call_3", "u3", 429),
        ("bob", "call_4", "u1", 200),
    ] {
        let mut body = with_id(add(&receiver.url), id);
        body["user_id"] = json!(user);
        assert_eq!(invoke_as(&rig, caller, &body).await, status, "{id}");
        rig.settle().await;
    }
    let hits = receiver.wait_for(3).await;
    let ids: Vec<&str> = hits
        .iter()
        .map(|h| h.body["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["call_1", "call_2", "call_4"],
        "another caller has their own allowance"
    );
    assert!(hits.iter().all(|h| h.body["text"] == "3"));
}

#[tokio::test]
async fn each_caller_holds_at_most_its_share_of_the_pending_invocations() {
    let captured = Captured::global();
    let rig = Rig::build(
        |c| {
            // One caller's share of the work every process shares.
            *c = Config::from_vars(false, [("OXP_WORK_MAX_PER_CALLER", "2")]).unwrap();
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            };
        },
        |r| r.max_pending = 4,
    )
    .await;
    let receiver = Receiver::ok().await;
    let wait = |id: &str| with_id(invocation(&receiver.url, "Test_Wait", json!({})), id);
    // Alice's tools hang: her third invocation is refused (429, her share is full) while the
    // queue still has room, so Bob's are accepted; only a full queue refuses everyone (503).
    assert_eq!(invoke_as(&rig, "alice", &wait("a1")).await, 200);
    assert_eq!(invoke_as(&rig, "alice", &wait("a2")).await, 200);
    assert_eq!(invoke_as(&rig, "alice", &wait("a3")).await, 429);
    assert_eq!(invoke_as(&rig, "bob", &wait("b1")).await, 200);
    assert_eq!(invoke_as(&rig, "bob", &wait("b2")).await, 200);
    assert_eq!(invoke_as(&rig, "carol", &wait("c1")).await, 503);
    // Once Alice's answer, her share is free again.
    rig.tools.gate.add_permits(4);
    rig.settle().await;
    assert_eq!(receiver.wait_for(4).await.len(), 4);
    assert_eq!(invoke_as(&rig, "alice", &wait("a4")).await, 200);
    rig.tools.gate.add_permits(1);
    rig.settle().await;
    let ids: Vec<String> = receiver
        .wait_for(5)
        .await
        .iter()
        .map(|h| h.body["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!ids.contains(&"a3".to_owned()), "the refused one never ran");
    assert!(ids.contains(&"a4".to_owned()));
    // Whose share it was: the refusal's audit line names its caller, as each answer's does.
    let text = captured.text();
    let audit = |holds: &dyn Fn(&Value) -> bool| {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["target"] == "oxp::rap::audit" && holds(&l["fields"]))
    };
    let refused = |f: &Value| {
        f["outcome"] == "refused"
            && f["caller"] == "alice"
            && f["reason"]
                .as_str()
                .is_some_and(|r| r.contains("This caller has too many"))
    };
    assert!(audit(&refused), "the refusal names alice");
    assert!(audit(&|f| f["id"] == "a4" && f["caller"] == "alice"));
}

#[tokio::test]
async fn a_result_without_room_in_its_callers_share_is_answered_with_a_retryable_busy_error() {
    let rig = Rig::build(
        |c| {
            // Room for one result of two parts per caller.
            *c = Config::from_vars(false, [("OXP_WORK_MAX_BYTES_PER_CALLER", "300000")]).unwrap();
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            };
        },
        |r| r.retry.attempt_timeout = Duration::from_secs(10),
    )
    .await;
    let (held, receiver) = (Receiver::ok().await, Receiver::ok().await);
    // Long enough for her next and bob's to be answered meanwhile, on a loaded machine too.
    held.hold("tool_result", Duration::from_secs(5));
    let big = |url: &str, id: &str| with_id(invocation(url, "Test_Big", json!({})), id);
    // Alice's first result is kept while its delivery is in flight: her room is full.
    assert_eq!(invoke_as(&rig, "alice", &big(&held.url, "a1")).await, 200);
    held.wait_kind("tool_result", 1).await;
    // Her next is answered with an error she can retry, not kept whole.
    assert_eq!(
        invoke_as(&rig, "alice", &big(&receiver.url, "a2")).await,
        200
    );
    let refused = receiver.result().await;
    assert_eq!(refused["id"], "a2");
    let error = error_of(&refused);
    assert_eq!(error["kind"], "busy");
    assert_eq!(error["can_retry"], true);
    // Bob's room is his own.
    assert_eq!(invoke_as(&rig, "bob", &big(&receiver.url, "b1")).await, 200);
    let bobs = receiver.wait_kind("tool_result", 2).await.remove(1);
    assert_eq!(bobs["id"], "b1");
    assert_eq!(bobs["text"].as_str().unwrap().len(), 400_008);
    // Once her first is delivered, its room is given back: the refused invocation sent again
    // is answered with its result, whole.
    rig.settle().await;
    assert_eq!(
        held.of_kind("tool_result")[0]["text"]
            .as_str()
            .unwrap()
            .len(),
        400_008
    );
    assert_eq!(
        invoke_as(&rig, "alice", &big(&receiver.url, "a2")).await,
        200
    );
    let again = receiver.wait_kind("tool_result", 3).await.remove(2);
    assert_eq!(again["id"], "a2");
    assert_eq!(again["text"].as_str().unwrap().len(), 400_008);
}

#[tokio::test]
async fn without_authentication_the_one_caller_runs_more_jobs_at_once_than_a_callers_share() {
    // Callers do not authenticate: every invocation is the one anonymous caller's, which has
    // no share of the runner's turns (64), as a call without a subject has none of the
    // invoker's slots. Twelve jobs run at once where a caller's share is eight.
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    for n in 0..12 {
        let body = with_id(
            invocation(&receiver.url, "Test_Wait", json!({})),
            &format!("w{n}"),
        );
        assert_eq!(rig.invoke(body).await.status, 200);
    }
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while rig.tools.waiting.load(Ordering::SeqCst) < 12 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        rig.tools.waiting.load(Ordering::SeqCst),
        12,
        "all twelve run at once"
    );
    rig.tools.gate.add_permits(12);
    rig.settle().await;
    assert_eq!(receiver.wait_for(12).await.len(), 12);
}

#[tokio::test]
async fn one_callers_hung_callbacks_do_not_delay_another_callers_result() {
    let rig = Rig::build(
        |c| {
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            }
        },
        |r| r.retry.attempt_timeout = Duration::from_secs(30),
    )
    .await;
    // Alice's callback accepts the connection and never answers: each of her 70 results is
    // in flight for the attempt's 30 s.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = format!("http://{}/callback", hanging.local_addr().unwrap());
    for n in 0..70 {
        let body = with_id(add(&hung), &format!("a{n}"));
        assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Bob's result arrives as it would alone: Alice's runs hold her own turns, not his.
    let receiver = Receiver::ok().await;
    let started = std::time::Instant::now();
    assert_eq!(invoke_as(&rig, "bob", &add(&receiver.url)).await, 200);
    assert_eq!(receiver.result().await["text"], "3");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "bob waited {took:?}");
    drop(hanging);
}

#[tokio::test]
async fn an_invocation_over_the_rate_limit_is_a_429_with_retry_after_and_runs_nothing() {
    let rig = Rig::with_rap(|r| {
        r.rate_limit = Some(oxp_lambda::config::RateLimit {
            invocations: 1,
            per: Duration::from_secs(60),
        })
    })
    .await;
    let receiver = Receiver::ok().await;
    let first = rig.invoke(with_id(add(&receiver.url), "r1")).await;
    assert_eq!(first.status, 200);
    let over = rig.invoke(with_id(add(&receiver.url), "r2")).await;
    assert_eq!(over.status, 429, "{}", over.text);
    let wait: u64 = over.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(over.json["error"]["kind"], "rate_limited");
    assert_eq!(over.json["error"]["can_retry"], true);
    rig.settle().await;
    assert_eq!(
        receiver.hits().len(),
        1,
        "the refused invocation was neither run nor delivered"
    );
}

#[tokio::test]
async fn every_invocation_is_audited_with_operation_ids_timestamps_and_outcome_but_no_data() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber());

    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    rig.accept(invocation(
        &receiver.url,
        "Doorbell_Ring",
        json!({"doorbell_id": "ARGUMENT-VALUE"}),
    ))
    .await;
    rig.accept(with_id(
        invocation(&receiver.url, "Test_Panic", json!({})),
        "call_panic",
    ))
    .await;
    rig.settle().await;
    let _ = post(&rig.app, "/invoke", "{not json").await;
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let audit: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "oxp::rap::audit")
        .collect();
    assert_eq!(audit.len(), 3, "one line per invocation: {logs}");
    let ring = &audit
        .iter()
        .find(|l| l["fields"]["operation"] == "Doorbell_Ring")
        .unwrap()["fields"];
    assert_eq!(ring["id"], "call_abc123");
    assert_eq!(ring["group_id"], "thread_xyz");
    assert_eq!(ring["user_id"], "user_42");
    assert_eq!(ring["outcome"], "tool_error");
    assert_eq!(ring["delivery"], "delivered");
    assert!(ring["received_at"].as_str().unwrap().ends_with('Z'));
    assert!(ring["completed_at"].as_str().unwrap().ends_with('Z'));
    assert!(audit.iter().any(|l| l["fields"]["outcome"] == "refused"));
    for line in &audit {
        let text = line.to_string();
        assert!(
            !text.contains("ARGUMENT-VALUE") && !text.contains("hunter2"),
            "{text}"
        );
    }
}

/// `/invoke` through API Gateway with a JWT authorizer that verified `sub`.
async fn invoke_as(rig: &Rig, sub: &str, body: &Value) -> u16 {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-rap-invoke.json").unwrap(),
    )
    .unwrap();
    event["body"] = Value::String(body.to_string());
    event["requestContext"]["authorizer"] =
        json!({"jwt": {"claims": {"sub": sub}, "scopes": null}});
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let response = Adapter::from(rig.app.clone())
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    serde_json::to_value(response).unwrap()["statusCode"]
        .as_u64()
        .unwrap() as u16
}

#[tokio::test]
async fn with_user_binding_a_caller_can_only_act_for_itself() {
    let rig = Rig::with(|c| c.auth = AuthConfig::ApiGateway { bind_user_id: true }).await;
    let receiver = Receiver::ok().await;
    let mut body = invocation(&receiver.url, "Test_Echo", json!({}));
    body["user_id"] = json!("mallory");
    assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    let error = error_of(&receiver.result().await);
    assert_eq!(error["kind"], "unauthorized");
    body.as_object_mut().unwrap().remove("user_id");
    assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    let hits = receiver.wait_for(2).await;
    let seen: Value = serde_json::from_str(hits[1].body["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["user_id"], "alice", "the user defaults to the caller");
}

/// An acknowledged invocation is counted where it was accepted (`OXP_RAP_RATE_LIMIT`), never by
/// the calls' rate (`OXP_RATE_LIMIT`) when it runs: one the caller was told is accepted does not
/// end as rate limited.
#[tokio::test]
async fn an_accepted_invocation_is_not_counted_again_by_the_calls_rate_when_it_runs() {
    let rig = Rig::with(|c| c.rate_limit = oxp_lambda::config::RateLimit::parse("1/min")).await;
    let receiver = Receiver::ok().await;
    for id in ["call_1", "call_2", "call_3"] {
        rig.accept(with_id(add(&receiver.url), id)).await;
    }
    rig.settle().await;
    let hits = receiver.wait_for(3).await;
    for hit in &hits {
        assert_eq!(hit.body["text"], "3", "{:?}", hit.body);
    }
    // The same server's synchronous calls are counted: the first passes, the second is over.
    let call = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    let first = common::call(&rig.app, call.clone()).await;
    assert_eq!(first.json["result"]["success"], true, "{}", first.text);
    let second = common::call(&rig.app, call).await;
    assert_eq!(
        second.json["result"]["error"]["can_retry"], true,
        "{}",
        second.text
    );
}
