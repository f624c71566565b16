//! The documentation and the code agree: every variable, every page linked, the tools the
//! deploy page installs, every test a page cites (the SAM template's own checks are
//! `template.rs`).

use std::collections::BTreeSet;

/// Every `OXP_NAME` token in `text` (a `<ID>` placeholder suffix is kept as `OXP_SECRET_`).
fn oxp_variables(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("OXP_") {
        let start = i + pos;
        let mut end = start + 4;
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        found.insert(text[start..end].to_owned());
        i = end;
    }
    found
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Every Rust file under `dir`, with its text.
fn rust_files(dir: &std::path::Path, found: &mut Vec<(std::path::PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = read(path.to_str().unwrap());
            found.push((path, text));
        }
    }
}

/// The non-test code under `dir`, concatenated: each subsystem reads its own variables.
fn source(dir: &std::path::Path) -> String {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut text = String::new();
    for (path, file) in files {
        let name = path.file_name().unwrap().to_str().unwrap();
        if !name.ends_with("_tests.rs") && name != "tests.rs" && name != "moto.rs" {
            text += file.split("#[cfg(test)]\nmod tests").next().unwrap();
        }
    }
    text
}

/// The variables the code reads (a name prefix such as `OXP_RAP_` or a constant such as
/// `OXP_1_0` is not one).
fn code() -> BTreeSet<String> {
    oxp_variables(&source(std::path::Path::new("src")))
        .into_iter()
        .filter(|v| v == "OXP_SECRET_" || !v.ends_with('_'))
        .filter(|v| !v.as_bytes()[4].is_ascii_digit())
        .collect()
}

#[test]
fn every_variable_the_code_reads_is_in_the_configuration_page() {
    let readme = oxp_variables(&read("docs/configuration.md"));
    let code = code();
    let missing: Vec<_> = code.iter().filter(|v| !readme.contains(*v)).collect();
    assert!(
        missing.is_empty(),
        "not documented in docs/configuration.md: {missing:?}"
    );
}

#[test]
fn every_variable_the_template_sets_is_read_by_the_code() {
    let template = oxp_variables(&read("template.yaml"));
    let code = code();
    assert!(template.len() >= 10, "{template:?}");
    // A provider's variables (`OXP_OAUTH_<ID>_CLIENT_ID`) are read by suffix.
    let source = source(std::path::Path::new("src"));
    let per_provider = |v: &str| {
        v.strip_prefix("OXP_OAUTH_").is_some_and(|rest| {
            [
                "CLIENT_ID",
                "ISSUER",
                "SCOPES",
                "AUTHORIZE_URL",
                "TOKEN_URL",
            ]
            .iter()
            .any(|suffix| {
                rest.ends_with(&format!("_{suffix}"))
                    && source.contains(&format!("var(\"{suffix}\")"))
            })
        })
    };
    let unknown: Vec<_> = template
        .iter()
        .filter(|v| !v.ends_with('_') && !code.contains(*v) && !per_provider(v))
        .collect();
    assert!(
        unknown.is_empty(),
        "template.yaml sets variables the code ignores: {unknown:?}"
    );
}

#[test]
fn every_page_the_readme_links_exists_and_every_doc_is_linked() {
    let readme = read("README.md");
    for entry in std::fs::read_dir("docs").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            readme.contains(&format!("(docs/{name})")),
            "README.md does not link docs/{name}"
        );
    }
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap();
        if !target.starts_with("http") {
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            assert!(
                std::path::Path::new(path).exists(),
                "README.md links {target}, which does not exist"
            );
            // An anchor names a heading of the page (GitHub's slug: lower case, punctuation but
            // `-` and `_` dropped, spaces to `-`).
            if !anchor.is_empty() {
                let slugs: Vec<String> = read(path)
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|h| {
                        h.trim_start_matches('#')
                            .trim()
                            .to_lowercase()
                            .chars()
                            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                            .collect::<String>()
                            .replace(' ', "-")
                    })
                    .collect();
                assert!(
                    slugs.iter().any(|s| s == anchor),
                    "README.md links {target}, a heading {path} does not have"
                );
            }
        }
    }
    assert!(
        // Two commands with their figures, the answers of "Try it", the starter first.
        readme.lines().count() <= 180,
        "the README stays short: reference goes to docs/"
    );
}

#[test]
fn the_deploy_page_installs_cargo_lambda_and_zig_in_the_ranges_the_scripts_use() {
    let script = read("scripts/lambda-tools");
    let deploy = read("docs/deploy.md");
    let quoted = |text: &str, package: &str| -> Vec<String> {
        text.split('"')
            .filter(|part| {
                part.starts_with(package) && part[package.len()..].starts_with(['>', '<', '='])
            })
            .map(str::to_owned)
            .collect()
    };
    for package in ["cargo-lambda", "ziglang"] {
        let installed = quoted(&script, package);
        assert_eq!(
            installed.len(),
            1,
            "scripts/lambda-tools pins {package} once"
        );
        assert_eq!(
            quoted(&deploy, package),
            installed,
            "docs/deploy.md installs {package} as scripts/lambda-tools does"
        );
    }
}

#[test]
fn every_test_a_doc_cites_by_name_exists() {
    let mut files = Vec::new();
    for dir in ["src", "tests", "crates", "examples"] {
        rust_files(std::path::Path::new(dir), &mut files);
    }
    // The `fn` names of them all.
    let mut names = BTreeSet::new();
    for (_, text) in &files {
        for (at, _) in text.match_indices("fn ") {
            let name: String = text[at + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    let mut pages = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir("docs").unwrap() {
        pages.push(format!(
            "docs/{}",
            entry.unwrap().file_name().to_str().unwrap()
        ));
    }
    for page in pages {
        // A cited test is `module::...::name` in backticks (on one line), its name a sentence.
        let text = read(&page);
        for cited in text.lines().flat_map(|l| l.split('`').skip(1).step_by(2)) {
            let Some((module, name)) = cited.rsplit_once("::") else {
                continue;
            };
            let sentence = name.len() > 25
                && name.contains('_')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            // Of this project: a module of the tests or of the library, not another crate's.
            let first = module.split("::").next().unwrap();
            let ours = ["tests/{}.rs", "src/{}.rs", "src/{}"]
                .iter()
                .any(|shape| std::path::Path::new(&shape.replace("{}", first)).exists());
            if sentence && ours {
                assert!(
                    names.contains(name),
                    "{page} cites `{cited}`, which no test is named"
                );
            }
        }
    }
}
