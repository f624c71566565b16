//! The round trips' unit tests: sealing, binding, single use.
use super::*;
use crate::mcp::questions::Carried;
use oxp_lambda_core::form::Form;
use oxp_lambda_core::secrets::ClientSecrets;
use oxp_lambda_core::talk::{Ask, Talk, TalkError};
use serde_json::json;

fn trips() -> RoundTrips {
    let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
    RoundTrips::new(secrets, false, None)
}

/// A round's answers are taken once: sent again without its (spent) state, they answer
/// nothing and the tool asks again; answers no round took are taken as given.
#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_spent_rounds_answers_sent_bare_answer_nothing_while_untaken_ones_are_taken() {
    let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
    let store: Arc<dyn StateStore> = Arc::new(crate::state::embedded::Embedded::new(None));
    let trips = RoundTrips::new(
        secrets,
        false,
        Some(Arc::new(crate::work::Questions::new(store))),
    );
    let binding = binding(Some("alice"), "Demo_Confirm", &json!({"prompt": "Go?"}));
    let ask = Ask::new("Go?", ["Yes", "No"]);
    let first = Exchange::default();
    let first = Carried(first);
    assert!(first.ask(ask.clone(), 0).await.is_err());
    let result = trips.input_required(&first, &binding).await.unwrap();
    let state = result.unwrap().request_state.unwrap();
    let answered = trips
        .begin(None, &binding, Some(&state), Some(&accept("No")))
        .await
        .unwrap();
    let answered = Carried(answered);
    assert_eq!(answered.ask(ask.clone(), 0).await.unwrap().index, 1);
    let replayed = trips
        .begin(None, &binding, None, Some(&accept("No")))
        .await
        .unwrap();
    let replayed = Carried(replayed);
    assert!(matches!(
        replayed.ask(ask.clone(), 0).await,
        Err(TalkError::Parked)
    ));
    // Another caller's bare answer, or another answer, was never taken.
    let bob = binding_of("bob");
    let theirs = trips
        .begin(None, &bob, None, Some(&accept("No")))
        .await
        .unwrap();
    let theirs = Carried(theirs);
    assert_eq!(theirs.ask(ask.clone(), 0).await.unwrap().index, 1);
    let other = trips
        .begin(None, &binding, None, Some(&accept("Yes")))
        .await
        .unwrap();
    let other = Carried(other);
    assert_eq!(other.ask(ask, 0).await.unwrap().index, 0);
}

/// A caller's answered rounds keep marks (a spent state, an answer) for the state's time, in
/// the state store: past its share of them its next round is refused and nothing is marked,
/// while another caller's rounds go on.
#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_callers_rounds_past_its_share_of_marks_are_refused_never_another_callers() {
    let store: Arc<dyn StateStore> = Arc::new(crate::state::embedded::Embedded::new(None));
    let trips = trips_over(store, 5);
    let (alice, bob) = (binding_of("alice"), binding_of("bob"));
    // Each answered round marks its state and its one answer: two rounds fit in five marks.
    for _ in 0..2 {
        let state = state_for(&trips, &alice).await;
        assert_eq!(answered(&trips, "alice", &alice, &state).await, Ok(()));
    }
    let state = state_for(&trips, &alice).await;
    assert_eq!(answered(&trips, "alice", &alice, &state).await, Err(-32005));
    let theirs = state_for(&trips, &bob).await;
    let answer = answered(&trips, "bob", &bob, &theirs).await;
    assert_eq!(answer, Ok(()), "bob's round goes on");
}

/// Two servers sharing one store (and one sealing key), each a round trip's: alice's rounds
/// answered through either count in her one share of marks, so past it a round through the
/// other server is refused too (a process counting only its own marks gave her twice it).
async fn a_callers_share_of_marks_is_one_across(store: Arc<dyn StateStore>) {
    let key = std::env::temp_dir().join(format!("oxp-state-{}.key", uuid::Uuid::new_v4()));
    let server = || trips_over(store.clone(), 5).with_key_file(Some(key.clone()));
    let (a, b) = (server(), server());
    let alice = binding_of("alice");
    let state_on = async |server: &RoundTrips| state_for(server, &alice).await;
    let answer =
        async |state: &str, server: &RoundTrips| answered(server, "alice", &alice, state).await;
    // Two marks a round: one round through each server fills four of her five, a replay of
    // the first through the other marks nothing (the slots it took go back).
    let first = state_on(&a).await;
    assert_eq!(answer(&first, &a).await, Ok(()));
    assert_eq!(answer(&first, &b).await, Err(-32602), "used before");
    assert_eq!(answer(&state_on(&b).await, &b).await, Ok(()));
    assert_eq!(answer(&state_on(&a).await, &b).await, Err(-32005));
    assert_eq!(answer(&state_on(&b).await, &a).await, Err(-32005));
    let _ = std::fs::remove_file(key);
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_callers_share_of_marks_is_one_across_servers_sharing_a_file() {
    let store = crate::state::embedded::store(None).unwrap();
    a_callers_share_of_marks_is_one_across(store).await;
}

#[cfg(feature = "dynamodb")]
#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_callers_share_of_marks_is_one_across_servers_sharing_a_table() {
    let (client, table) = crate::moto::state_table().await;
    let store = crate::state::dynamodb::DynamoState::new(client, table);
    a_callers_share_of_marks_is_one_across(Arc::new(store)).await;
}

/// A round whose state the store did not mark runs nothing and holds none of its caller's
/// share: the slots its marks took go back.
#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_round_the_store_did_not_mark_gives_its_slots_back() {
    let store = crate::state::embedded::store(None).unwrap();
    let counting = crate::state::counting::CountingReads::of(store, "mcp-state-spent");
    let trips = trips_over(counting.clone(), 5);
    let alice = binding_of("alice");
    let answer = async || answered(&trips, "alice", &alice, &state_for(&trips, &alice).await).await;
    counting.fail_next_writes(1);
    assert_eq!(answer().await, Err(-32603), "the store did not answer");
    // Two marks a round: two rounds fit in five only if the failed one holds none.
    assert_eq!(answer().await, Ok(()));
    assert_eq!(answer().await, Ok(()));
    assert_eq!(answer().await, Err(-32005));
}

/// A replayed state is refused as used before on one read, whether or not its caller's share
/// is full, and takes nothing from that share (its listing is what a full share costs).
#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_replayed_state_is_refused_without_reading_its_callers_share() {
    let (counting, trips, alice) = alice_with_two_marks();
    let state = state_for(&trips, &alice).await;
    let answer = async || answered(&trips, "alice", &alice, &state).await;
    // Its two marks fill her share.
    assert_eq!(answer().await, Ok(()));
    let lists = counting.lists();
    for _ in 0..3 {
        assert_eq!(answer().await, Err(-32602), "used before");
    }
    assert_eq!(counting.lists(), lists, "her share was not listed");
}

/// A caller at its full share of marks has its rounds refused on one listing of that share,
/// not one a round: the process remembers it full for a second.
#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn rounds_refused_at_a_full_share_read_it_once() {
    let (counting, trips, alice) = alice_with_two_marks();
    let answer = async || answered(&trips, "alice", &alice, &state_for(&trips, &alice).await).await;
    assert_eq!(answer().await, Ok(()), "two marks fill her share");
    let lists = counting.lists();
    for _ in 0..3 {
        assert_eq!(answer().await, Err(-32005));
    }
    assert_eq!(counting.lists() - lists, 1);
}

/// Round trips keeping their marks in `store`, `marks` a caller.
/// Round trips over an embedded store whose listings of alice's share of marks are counted,
/// that share two marks (one round's), and alice's binding.
#[cfg(feature = "embedded-state")]
fn alice_with_two_marks() -> (
    Arc<crate::state::counting::CountingReads>,
    RoundTrips,
    Vec<u8>,
) {
    let store = crate::state::embedded::store(None).unwrap();
    let share = format!("mcp-spent-of#{}", crate::state::caller_key(Some("alice")));
    let counting = crate::state::counting::CountingReads::of(store, share);
    let trips = trips_over(counting.clone(), 2);
    (counting, trips, binding_of("alice"))
}

fn trips_over(store: Arc<dyn StateStore>, marks: u64) -> RoundTrips {
    let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
    let questions = Some(Arc::new(crate::work::Questions::new(store)));
    RoundTrips::new(secrets, false, questions).with_marks_per_caller(marks)
}

/// The state of a round that asked `binding`'s caller a question.
async fn state_for(trips: &RoundTrips, binding: &[u8]) -> String {
    let asked = Carried(Exchange::default());
    assert!(asked.ask(Ask::new("Go?", ["Yes", "No"]), 0).await.is_err());
    let result = trips.input_required(&asked, binding).await.unwrap();
    result.unwrap().request_state.unwrap()
}

/// `caller`'s round of `state` answered "No" (bound to `binding`): its error code, if refused.
async fn answered(
    trips: &RoundTrips,
    caller: &str,
    binding: &[u8],
    state: &str,
) -> Result<(), i32> {
    let no = accept("No");
    let begun = trips.begin(Some(caller), binding, Some(state), Some(&no));
    begun.await.map(drop).map_err(|e| e.code.0)
}

fn binding_of(caller: &str) -> Vec<u8> {
    binding(Some(caller), "Demo_Confirm", &json!({"prompt": "Go?"}))
}

fn accept(label: &str) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(
        "ask_0".into(),
        json!({"action": "accept", "content": {"choice": label}}),
    );
    r
}

#[tokio::test]
async fn a_state_opens_only_for_its_caller_and_call_and_unaltered() {
    let trips = trips();
    let binding = binding(Some("alice"), "Demo_Confirm", &json!({"prompt": "Go?"}));
    let first = Exchange::default();
    let first = Carried(first);
    let ask = Ask::new("Go?", ["Yes", "No"]);
    assert!(matches!(
        first.ask(ask.clone(), 0).await,
        Err(TalkError::Parked)
    ));
    let result = trips
        .input_required(&first, &binding)
        .await
        .unwrap()
        .unwrap();
    let state = result.request_state.unwrap();
    let answered = trips
        .begin(None, &binding, Some(&state), Some(&accept("No")))
        .await
        .unwrap();
    let answered = Carried(answered);
    assert_eq!(answered.ask(ask.clone(), 0).await.unwrap().index, 1);
    // Another caller, another tool's arguments, an altered state: refused.
    let bob = super::binding(Some("bob"), "Demo_Confirm", &json!({"prompt": "Go?"}));
    assert!(trips.begin(None, &bob, Some(&state), None).await.is_err());
    let other = super::binding(Some("alice"), "Demo_Confirm", &json!({"prompt": "Stop?"}));
    let other = Carried(other);
    assert!(trips.begin(None, &other, Some(&state), None).await.is_err());
    let mut altered = state.clone().into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    assert!(
        trips
            .begin(None, &binding, Some(&altered), None)
            .await
            .is_err()
    );
    // Without a state, a response answers the question of its key only; a malformed one
    // is still refused.
    let mut elsewhere = InputResponses::new();
    elsewhere.insert("other".into(), json!({"action": "decline"}));
    let fresh = trips
        .begin(None, &binding, None, Some(&elsewhere))
        .await
        .unwrap();
    let fresh = Carried(fresh);
    assert!(matches!(
        fresh.ask(ask.clone(), 0).await,
        Err(TalkError::Parked)
    ));
    let mut malformed = InputResponses::new();
    malformed.insert("ask_0".into(), json!({"action": "maybe"}));
    assert!(
        trips
            .begin(None, &binding, None, Some(&malformed))
            .await
            .is_err()
    );
    // Two questions open at once may not share a key: the client could not tell which
    // one a response answers.
    let twice = Exchange::default();
    let twice = Carried(twice);
    let form = || Form::new("same", "Which?", json!({"type": "object"}));
    assert!(matches!(
        twice.fill(form(), 0).await,
        Err(TalkError::Parked)
    ));
    assert!(matches!(
        twice.fill(form(), 1).await,
        Err(TalkError::Invalid(why)) if why.contains("share the key")
    ));
    let mut bad = InputResponses::new();
    bad.insert("ask_0".into(), json!({"action": "maybe"}));
    assert!(
        trips
            .begin(None, &binding, Some(&state), Some(&bad))
            .await
            .is_err()
    );
}

#[test]
fn a_rounds_end_boxed_at_every_2026_07_28_call_is_small() {
    // Boxed where it is awaited, at every call: the task a tool may detach into is boxed
    // within it in turn (inline, it made this future about 10 KB, copied at every call).
    let round = Round {
        exchange: None,
        url: false,
        detaching: None,
    };
    let answer: Result<Outcome, Rejection> = Err(Rejection::KeyReused("x".into()));
    let end = std::mem::size_of_val(&round.end(None, "Calc_Add", &answer));
    assert!(end < 2048, "{end} bytes");
}

/// A round is never sealed bound to nothing: a call whose client takes no question goes
/// without a binding (it cannot be asked), and should one of its questions be parked all the
/// same, no state is given out.
#[tokio::test]
async fn a_question_parked_without_a_binding_is_no_state_given_out() {
    let trips = trips();
    let asked = || async {
        let exchange = Carried(Exchange::default());
        let ask = Ask::new("Go?", ["Yes", "No"]);
        assert!(matches!(exchange.ask(ask, 0).await, Err(TalkError::Parked)));
        exchange
    };
    let unbound = asked().await;
    assert!(trips.input_required(&unbound, &[]).await.is_err());
    let (bound, binding) = (asked().await, binding_of("alice"));
    let sealed = trips.input_required(&bound, &binding).await;
    assert!(sealed.unwrap().is_some());
}

/// What a state is bound to is the same bytes whatever writes them (a state sealed by one
/// build opens in the next): the caller and the tool, each after its length, then the
/// arguments as serde_json writes them (members in order), under SHA-256.
#[test]
fn a_binding_is_the_digest_of_the_caller_the_tool_and_the_arguments_as_written() {
    let bound = binding(
        Some("alice"),
        "Demo_Confirm",
        &json!({"prompt": "Go?", "b": [1, 2]}),
    );
    let hex: String = bound.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "8c6ae9a03cc78e3b504b439c2f7f59dbb348a2786049f48856957963f5d6db47"
    );
}
