//! The state stores the benches run on: the embedded database (a file in a temporary
//! directory) and, when moto is on (`OXP_TEST_MOTO_URL`, as `scripts/bench` and `scripts/test`
//! start it), DynamoDB on moto. Shared by the benches that include it (`#[path]`), beside
//! `src/moto.rs` as their `aws` module.

/// One state store: its name in bench ids, its variables, its AWS configuration, and the
/// fan-out sizes it runs.
pub struct Store {
    pub name: &'static str,
    pub vars: Vec<(&'static str, String)>,
    pub aws: Option<aws_config::SdkConfig>,
    pub sizes: Vec<usize>,
}

/// The embedded store, and DynamoDB on moto when moto is on; `full`: the large fan-outs too.
pub fn stores(rt: &tokio::runtime::Runtime, full: bool) -> Vec<Store> {
    let dir = std::env::temp_dir().join(format!("oxp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.redb").display().to_string();
    let _ = std::fs::remove_file(&path);
    let mut stores = vec![Store {
        name: "embedded",
        vars: vec![("OXP_STATE", "embedded".into()), ("OXP_STATE_PATH", path)],
        aws: None,
        sizes: if full {
            vec![1, 100, 10_000]
        } else {
            vec![1, 100]
        },
    }];
    if std::env::var("OXP_TEST_MOTO_URL").is_ok() {
        let (aws, table) = rt.block_on(async {
            let (_, table) = super::aws::state_table().await;
            (super::aws::sdk_config(&super::aws::moto_url()).await, table)
        });
        stores.push(Store {
            name: "dynamodb_on_moto",
            vars: vec![("OXP_STATE", "dynamodb".into()), ("OXP_STATE_TABLE", table)],
            aws: Some(aws),
            sizes: vec![1, 100],
        });
    }
    stores
}
