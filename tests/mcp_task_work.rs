//! MCP tasks as acknowledged work (docs/reliability.md): two servers sharing one state table
//! (DynamoDB on moto, as containers would), one stopping with a task running (it lets the run
//! go), the other taking it over at once: a tool that may run twice runs again and completes,
//! any other ends `failed` with a message the client reads. And what a caller may leave with the
//! server: arguments are checked before a task is kept, and a caller's share of running work is
//! bounded (-32005, the others served), as is the room its results take, one across servers.

use crate::common;

use common::aws::{moto_url, sdk_config, state_table};
use common::tasks::*;
use common::{App, build, test_config_with};
use oxp_lambda::{Registry, Tool, ToolContext, ToolError};
use serde_json::json;
use std::time::Duration;

/// A long task's tool that may not run twice (it changes something, say), sleeping until
/// stopped.
fn migrating() -> Tool {
    Tool::builder("Job.Migrate", "1.0.0")
        .long_running()
        .handler(|_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(60)) => {}
                () = ctx.cancelled() => {}
            }
            Ok::<_, ToolError>(json!({"migrated": true}))
        })
}

/// A task's report of 400 kB: two parts of a kept result.
fn big_report() -> Tool {
    Tool::builder("Reports.Big", "1.0.0")
        .long_running()
        .handler(|_: oxp_lambda::NoInput, _: ToolContext| async move {
            Ok::<_, ToolError>("r".repeat(400_000))
        })
}

/// A local server over the DynamoDB table `table` (shared with others), with short leases and
/// sweeps.
async fn server(table: &str, vars: &[(&str, &str)]) -> App {
    let mut tools = common::example_tools::tools();
    tools.push(migrating());
    tools.push(big_report());
    let mut all = vec![
        ("OXP_STATE_TABLE", table),
        ("OXP_WORK_LEASE_SECS", "2"),
        ("OXP_WORK_SWEEP_SECS", "1"),
    ];
    all.extend_from_slice(vars);
    build(
        App::builder(Registry::builder().tools(tools).build().unwrap())
            .config(test_config_with(&all))
            .secret("MCP_STATE_KEY", common::STATE_KEY)
            .aws_config(sdk_config(&moto_url()).await),
    )
}

/// The items of partition `pk` of `table`.
async fn items(client: &aws_sdk_dynamodb::Client, table: &str, pk: &str) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue;
    let queried = client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(pk.into()))
        .send()
        .await
        .unwrap();
    queried.items().len()
}

async fn task(app: &App, tool: &str, arguments: serde_json::Value) -> String {
    let created = call(app, tool, arguments, true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_task_whose_tool_may_not_run_twice_let_go_at_shutdown_ends_failed_with_a_message() {
    let (_, table) = state_table().await;
    let (first, second) = (server(&table, &[]).await, server(&table, &[]).await);
    let id = task(&first, "Job_Migrate", json!({})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A task's run is let go at once after the drain's wait and the tools' grace (a second):
    // nothing of another kind's (a RAP delivery's attempt, 10 s) is waited out.
    let stopping = std::time::Instant::now();
    first.drain(Duration::from_millis(100)).await;
    let stopped = stopping.elapsed();
    assert!(stopped < Duration::from_secs(3), "let go after {stopped:?}");
    let failed = until(&second, &id, "failed").await;
    let message = failed["statusMessage"].as_str().unwrap();
    assert!(message.contains("stopped while the task ran"), "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_read_only_task_let_go_at_shutdown_is_run_again_by_the_other_server_and_completes() {
    let (_, table) = state_table().await;
    let (first, second) = (server(&table, &[]).await, server(&table, &[]).await);
    let id = task(&first, "Demo_Sleep", json!({"ms": 1500})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    first.drain(Duration::from_millis(100)).await;
    let done = until(&second, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let slept: serde_json::Value = serde_json::from_str(text).unwrap();
    assert!(slept["slept_ms"].as_u64().unwrap() >= 1500, "{done}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn arguments_that_break_the_schema_are_refused_before_a_task_is_kept() {
    let (client, table) = state_table().await;
    let app = server(&table, &[]).await;
    let big = "x".repeat(240 * 1024);
    let refused = call(&app, "Demo_Sleep", json!({"ms": big}), true).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_ne!(refused["resultType"], "task");
    for partition in ["mcp-task", "work"] {
        assert_eq!(
            items(&client, &table, partition).await,
            0,
            "nothing kept in {partition}"
        );
    }
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_caller_holds_at_most_its_share_of_running_tasks_and_is_told_so() {
    let (client, table) = state_table().await;
    let app = server(&table, &[("OXP_WORK_MAX_PER_CALLER", "2")]).await;
    for _ in 0..2 {
        task(&app, "Job_Migrate", json!({})).await;
    }
    let reply = rpc(
        &app,
        "tools/call",
        "Job_Migrate",
        json!({"name": "Job_Migrate", "arguments": {}}),
        true,
        None,
    )
    .await;
    assert_eq!(reply.json["error"]["code"], -32005, "{}", reply.text);
    assert_eq!(
        items(&client, &table, "mcp-task").await,
        2,
        "the refused one is not kept"
    );
}

/// Task `id`'s record as the table keeps it.
async fn task_record(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
) -> serde_json::Value {
    use aws_sdk_dynamodb::types::AttributeValue;
    let got = client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S("mcp-task".into()))
        .key("sk", AttributeValue::S(id.into()))
        .send()
        .await
        .unwrap();
    let bytes = got.item().unwrap()["v"].as_b().unwrap().as_ref().to_vec();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn finished_tasks_count_in_their_callers_share_while_kept_and_keep_no_arguments() {
    let (client, table) = state_table().await;
    let app = server(&table, &[("OXP_WORK_MAX_PER_CALLER", "2")]).await;
    let pad = "x".repeat(100 * 1024);
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(task(&app, "Demo_Sleep", json!({"ms": 10, "note": pad})).await);
    }
    for id in &ids {
        until(&app, id, "completed").await;
        let kept = task_record(&client, &table, id).await;
        assert!(
            kept["arguments"].as_object().is_none_or(|a| a.is_empty()),
            "a finished task keeps no arguments: {}",
            kept["arguments"].to_string().len()
        );
    }
    // Both ended, both still kept (their results readable for an hour): the share is full.
    let reply = rpc(
        &app,
        "tools/call",
        "Demo_Sleep",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 10, "note": pad}}),
        true,
        None,
    )
    .await;
    assert_eq!(reply.json["error"]["code"], -32005, "{}", reply.text);
    // Saying why, as none runs (it said "running; wait for one to end").
    let message = reply.json["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("running or kept") && message.contains("an hour after it ends"),
        "{message}"
    );
    assert_eq!(items(&client, &table, "mcp-task").await, 2);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_callers_rap_jobs_and_mcp_tasks_count_in_one_share() {
    let (_, table) = state_table().await;
    let app = server(
        &table,
        &[
            ("OXP_WORK_MAX_PER_CALLER", "2"),
            ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "true"),
        ],
    )
    .await;
    let receiver = common::receiver::Receiver::ok().await;
    // One RAP job and one MCP task of the same (anonymous) caller, both running.
    let invocation = json!({"operation": "Demo_Sleep", "arguments": {"ms": 5000}, "id": "j-1",
                            "group_id": "t", "callback_url": receiver.url});
    let reply = common::post(&app, "/invoke", invocation.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    task(&app, "Job_Migrate", json!({})).await;
    // A third, over either protocol, is over the one share.
    let reply = rpc(
        &app,
        "tools/call",
        "Job_Migrate",
        json!({"name": "Job_Migrate", "arguments": {}}),
        true,
        None,
    )
    .await;
    assert_eq!(reply.json["error"]["code"], -32005, "{}", reply.text);
    let invocation = json!({"operation": "Demo_Sleep", "arguments": {"ms": 1}, "id": "j-2",
                            "group_id": "t", "callback_url": receiver.url});
    let reply = common::post(&app, "/invoke", invocation.to_string()).await;
    assert_eq!(reply.status, 429, "{}", reply.text);
    assert!(
        reply.text.contains("MCP tasks running or kept"),
        "{}",
        reply.text
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_callers_room_for_its_results_is_one_across_servers_sharing_a_table() {
    let (_, table) = state_table().await;
    // Room for one result of two parts.
    let room = [("OXP_WORK_MAX_BYTES_PER_CALLER", "300000")];
    let (first, second) = (server(&table, &room).await, server(&table, &room).await);
    let kept = task(&first, "Reports_Big", json!({})).await;
    let done = until(&first, &kept, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 400_000);
    // Through the other server, the same caller's next result finds the room taken.
    let next = task(&second, "Reports_Big", json!({})).await;
    let failed = until(&second, &next, "failed").await;
    let message = failed["statusMessage"].as_str().unwrap();
    assert!(message.contains("larger than the room"), "{failed}");
}
