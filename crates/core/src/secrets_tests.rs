//! The cache in front of a source: one fetch per id at a time, a value kept for the TTL, a
//! missing secret remembered, any other failure only for the callers waiting for it.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A source that answers `answer` for every id after a short wait, counting its fetches.
#[derive(Debug)]
struct Counting {
    fetches: AtomicUsize,
    answer: Option<SecretErrorKind>,
}

impl Counting {
    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl SecretSource for Counting {
    fn holds(&self, _id: &str) -> bool {
        true
    }
    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        let n = self.fetches.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match self.answer {
                None => Ok(Secret::new(format!("value-{n}"))),
                Some(kind) => Err(SecretError::new(id, kind, "as the test says")),
            }
        })
    }
}

fn secrets(answer: Option<SecretErrorKind>, ttl: Duration) -> (Secrets, Arc<Counting>) {
    let source = Arc::new(Counting {
        fetches: AtomicUsize::new(0),
        answer,
    });
    let secrets = Secrets::new(Some(source.clone()), ttl, ClientSecrets::Unheld);
    (secrets, source)
}

#[tokio::test]
async fn concurrent_misses_for_one_id_make_one_fetch_and_the_value_is_kept_for_its_ttl() {
    let (secrets, source) = secrets(None, Duration::from_millis(300));
    let got = futures_util::future::join_all((0..20).map(|_| secrets.get("KEY"))).await;
    assert!(
        got.iter()
            .all(|v| v.as_ref().unwrap().expose() == "value-1")
    );
    assert_eq!(source.fetches(), 1, "one fetch for 20 misses");
    assert_eq!(secrets.get("KEY").await.unwrap().expose(), "value-1");
    assert_eq!(source.fetches(), 1, "a warm get fetches nothing");
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(secrets.get("KEY").await.unwrap().expose(), "value-2");
    assert_eq!(source.fetches(), 2, "fetched again past its TTL");
}

#[tokio::test]
async fn a_failed_fetch_answers_the_callers_waiting_for_it_and_the_next_get_fetches_again() {
    let (secrets, source) = secrets(Some(SecretErrorKind::Unreachable), Duration::from_secs(60));
    let got = futures_util::future::join_all((0..20).map(|_| secrets.get("KEY"))).await;
    assert!(
        got.iter()
            .all(|v| v.as_ref().unwrap_err().kind == SecretErrorKind::Unreachable)
    );
    assert_eq!(source.fetches(), 1, "the waiters share its failure");
    secrets.get("KEY").await.unwrap_err();
    assert_eq!(source.fetches(), 2, "a failure is not kept");
}

#[tokio::test]
async fn a_secret_the_source_does_not_have_is_remembered_as_missing() {
    let (secrets, source) = secrets(Some(SecretErrorKind::NotFound), Duration::from_secs(60));
    for _ in 0..3 {
        let err = secrets.get("NOPE").await.unwrap_err();
        assert_eq!(err.kind, SecretErrorKind::NotFound);
    }
    assert_eq!(source.fetches(), 1, "asked once within MISSING_FOR");
}
