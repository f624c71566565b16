use super::*;
use crate::state::counting::CountingReads;
use crate::work::Settings;
use crate::{Tool, ToolContext, ToolError};
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::registry::Registry;
use std::time::{Duration, Instant};

/// Tasks over `store` serving `Calc_Add` (it answers 3), their runs `settings`' runner.
fn tasks_over(store: Arc<dyn StateStore>, settings: Settings) -> (Arc<Tasks>, Arc<Runner>) {
    let add = Tool::builder("Calc.Add", "1.0.0").raw_handler(
        json!({"type": "object"}),
        Some(json!({"type": "integer"})),
        |_: Value, _: ToolContext| async move { Ok::<_, ToolError>(Value::from(3)) },
    );
    let registry = Arc::new(Registry::builder().tool(add).build().unwrap());
    let invoker = Arc::new(Invoker::new(
        registry.clone(),
        oxp_lambda_core::secrets::Secrets::default(),
        None,
        4,
        None,
    ));
    let tools = registry.served(&[], "pins").unwrap();
    let runner = Runner::new(store.clone(), settings);
    let questions = Arc::new(Questions::new(store));
    let tasks = Tasks::new(questions, invoker, &tools, runner.clone());
    super::runs::register(&tasks, &runner);
    (tasks, runner)
}

/// Waits for work `id` of `runner` to end.
async fn ended(runner: &Runner, id: &str) {
    let started = Instant::now();
    while runner.alive(id).await.unwrap() {
        assert!(started.elapsed() < Duration::from_secs(10), "the run ended");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn create(tasks: &Arc<Tasks>, tool: &str) -> Result<String, ErrorData> {
    let context = CallContext::default();
    let offers = Offers::forms();
    let created = tasks.create(context, tool, Map::new(), Answers::default(), offers);
    Ok(created.await?.task.task_id)
}

#[tokio::test]
async fn a_task_created_here_runs_from_the_record_it_wrote_without_reading_it_back() {
    let counting = CountingReads::of(crate::state::embedded::store(None).unwrap(), "mcp-task");
    let (tasks, runner) = tasks_over(counting.clone(), Settings::default());
    let id = create(&tasks, "Calc_Add").await.unwrap();
    ended(&runner, &work_id(&id)).await;
    assert_eq!(
        counting.reads(),
        0,
        "the run began from the record as written"
    );
    let task = tasks.get(None, &id).await.unwrap();
    assert_eq!(task.task.status, TaskStatus::Completed);
    assert!(tasks.handed.lock().unwrap().is_empty(), "nothing held on");
}

#[tokio::test]
async fn a_task_run_whose_record_is_gone_gives_its_callers_slot_back_at_once() {
    // A share of one: the run of a task whose record was never written (or has expired) must
    // not hold it for the hour a finished task's result is kept.
    let settings = Settings {
        per_caller: 1,
        ..Settings::default()
    };
    let (tasks, runner) = tasks_over(crate::state::embedded::store(None).unwrap(), settings);
    let (gone, caller) = (work_id("gone"), owner_of(None));
    let body = json!({"task": "gone"});
    assert!(
        runner
            .submit(TASK_RUN, &gone, Some(&caller), body)
            .await
            .unwrap()
    );
    ended(&runner, &gone).await;
    let id = create(&tasks, "Calc_Add")
        .await
        .expect("the caller's share has room");
    ended(&runner, &work_id(&id)).await;
    assert_eq!(
        tasks.get(None, &id).await.unwrap().task.status,
        TaskStatus::Completed
    );
}

#[tokio::test]
async fn a_task_whose_tool_is_not_served_here_ends_failed_saying_so() {
    // A deployment that dropped the tool, sharing the table: not `working` until it expires.
    let store = crate::state::embedded::store(None).unwrap();
    let (tasks, runner) = tasks_over(store, Settings::default());
    let id = create(&tasks, "Calc_Gone").await.unwrap();
    ended(&runner, &work_id(&id)).await;
    let task = tasks.get(None, &id).await.unwrap().task;
    assert_eq!(task.status, TaskStatus::Failed);
    let said = task.status_message.unwrap_or_default();
    assert!(said.contains("no longer served"), "{said}");
}
